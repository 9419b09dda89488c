"""A fake Flickr REST API (JSON format) and photo file host on 127.0.0.1, as flickrapi 2.4 talks to it:
signed POSTs to /services/rest/ naming the method in the form data.

people.findByUsername, people.getInfo, people.getPublicPhotos (paged: page/pages), photos.getInfo,
photos.getSizes, and the image files the sizes point at. Photos are generated from a seed.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from tests.fakes.httpserver import Request, Response
from tests.fakes.social import FakePlatform

API_KEY = "abddfe6fb8bba36e8ef0278ec65dbbc8"
API_SECRET = "1642649c54cc3ebe"
EPOCH = dt.datetime(2016, 5, 20, 9, 0, tzinfo=dt.UTC)
# label, URL suffix, longest edge (None: the original's own size)
SIZES = [("Square", "s", 75), ("Thumbnail", "t", 100), ("Small", "m", 240), ("Medium", "", 500),
         ("Large", "b", 1024), ("Original", "o", None)]


@dataclass
class Person:
    nsid: str
    username: str
    realname: str
    photos: list[dict] = field(default_factory=list)  # newest first, as getPublicPhotos returns them


def build_people(*, counts: dict[str, int] | None = None, seed: int = 11) -> dict[str, Person]:
    counts = counts or {"justin.littman": 13, "library_of_congress": 5}
    nsids = {"justin.littman": "131866249@N02", "library_of_congress": "671366249@N03"}
    rng = random.Random(seed)
    people = {}
    next_id = 26000000000
    for username, n in counts.items():
        person = Person(nsids.get(username, f"{rng.randrange(10**8, 10**9)}@N0{rng.randrange(1, 9)}"),
                        username, username.replace(".", " ").replace("_", " ").title())
        for i in range(n):
            next_id += rng.randrange(1, 5000)
            posted = EPOCH + dt.timedelta(hours=5 * i)
            person.photos.insert(0, {"id": str(next_id), "owner": person.nsid,
                                     "secret": f"{rng.getrandbits(40):010x}",
                                     "server": str(7000 + i % 50), "farm": 8, "title": f"Photo {i} by {username}",
                                     "posted": int(posted.timestamp()),
                                     "originalsecret": f"{rng.getrandbits(40):010x}"})
        people[person.nsid] = person
    return people


class FakeFlickr(FakePlatform):
    def __init__(self, *, people: dict[str, Person] | None = None, per_page: int = 10) -> None:
        super().__init__()
        self.people = people or build_people()
        self.per_page_cap = per_page  # so a handful of photos spans several pages
        self.add_route("/services/rest/", self.rest)
        for person in self.people.values():
            for photo in person.photos:
                self._add_images(photo)

    def _add_images(self, photo: dict) -> None:
        for _, suffix, _ in SIZES:
            self.add_route(self.image_path(photo, suffix), self.image)

    def publish(self, nsid: str) -> dict:
        """A new public photo of that person, newer than every other (the head of getPublicPhotos), as people
        upload while a harvest pages; the list is replaced, not changed in place."""
        person = self.people[nsid]
        with self._lock:
            rng = random.Random(len(person.photos))
            newest = max((int(p["id"]) for q in self.people.values() for p in q.photos), default=26000000000)
            posted = max((p["posted"] for p in person.photos), default=int(EPOCH.timestamp())) + 3600
            photo = {"id": str(newest + rng.randrange(1, 5000)), "owner": nsid, "secret": f"{rng.getrandbits(40):010x}",
                     "server": str(7000 + len(person.photos) % 50), "farm": 8,
                     "title": f"Photo {len(person.photos)} by {person.username}", "posted": posted,
                     "originalsecret": f"{rng.getrandbits(40):010x}"}
            self._add_images(photo)
            person.photos = [photo, *person.photos]
        return photo

    # --- what the tests count ---------------------------------------------------------------------------
    def person(self, username: str) -> Person:
        return next(p for p in self.people.values() if p.username == username)

    def image_path(self, photo: dict, suffix: str) -> str:
        secret = photo["originalsecret"] if suffix == "o" else photo["secret"]
        return f"/{photo['server']}/{photo['id']}_{secret}{'_' + suffix if suffix else ''}.jpg"

    def method_calls(self, method: str) -> int:
        return sum(1 for r in self.server.requests_to("/services/rest/") if _params(r).get("method") == method)

    # --- responses --------------------------------------------------------------------------------------
    def fault_response(self, status: int, req: Request) -> Response:
        if status == 401:
            return Response(401, b'{"stat":"fail","code":98,"message":"Invalid auth token"}')
        if status == 429:
            return Response(429, b"Too Many Requests", {"Retry-After": str(self.faults.reset_seconds)}, "text/plain")
        return Response(status, b"<html><body><h1>503 Service Unavailable</h1></body></html>", {}, "text/html")

    def _ok(self, body: dict) -> Response:
        return Response(200, json.dumps({**body, "stat": "ok"}).encode())

    def _fail(self, code: int, message: str) -> Response:
        return Response(200, json.dumps({"stat": "fail", "code": code, "message": message}).encode())

    def rest(self, req: Request) -> Response:
        params = _params(req)
        auth = req.headers.get("Authorization", "")
        if f'oauth_consumer_key="{API_KEY}"' not in auth and params.get("api_key") != API_KEY:
            return self._fail(100, "Invalid API Key (Key has invalid format)")
        if params.get("format") != "json":
            return self._fail(111, "Format \"rest\" not found")  # this fake speaks JSON only
        handler = {
            "flickr.people.findByUsername": self.find_by_username,
            "flickr.people.getInfo": self.person_info,
            "flickr.people.getPublicPhotos": self.public_photos,
            "flickr.photos.getInfo": self.photo_info,
            "flickr.photos.getSizes": self.photo_sizes,
        }.get(params.get("method", ""))
        if handler is None:
            return self._fail(112, f"Method \"{params.get('method')}\" not found")
        return handler(params)

    def find_by_username(self, params: dict) -> Response:
        person = next((p for p in self.people.values() if p.username == params.get("username")), None)
        if person is None:
            return self._fail(1, "User not found")
        return self._ok({"user": {"id": person.nsid, "nsid": person.nsid, "username": {"_content": person.username}}})

    def person_info(self, params: dict) -> Response:
        person = self.people.get(params.get("user_id", ""))
        if person is None:
            return self._fail(1, "User not found")
        first = min((p["posted"] for p in person.photos), default=None)
        return self._ok({"person": {
            "id": person.nsid, "nsid": person.nsid, "ispro": 0, "is_deleted": 0, "iconserver": "7000",
            "iconfarm": 8, "path_alias": person.username.replace(".", ""),
            "username": {"_content": person.username}, "realname": {"_content": person.realname},
            "location": {"_content": "Washington, DC"}, "description": {"_content": ""},
            "photosurl": {"_content": f"https://www.flickr.com/photos/{person.nsid}/"},
            "profileurl": {"_content": f"https://www.flickr.com/people/{person.nsid}/"},
            "photos": {"firstdate": {"_content": str(first or "")}, "count": {"_content": len(person.photos)}},
        }})

    def public_photos(self, params: dict) -> Response:
        person = self.people.get(params.get("user_id", ""))
        if person is None:
            return self._fail(1, "User not found")
        per_page = min(int(params.get("per_page") or 100), self.per_page_cap)
        page = max(int(params.get("page") or 1), 1)
        total = len(person.photos)
        pages = max((total + per_page - 1) // per_page, 1)
        chunk = person.photos[(page - 1) * per_page:page * per_page]
        photos = [{k: p[k] for k in ("id", "owner", "secret", "server", "farm", "title")}
                  | {"ispublic": 1, "isfriend": 0, "isfamily": 0} for p in chunk]
        return self._ok({"photos": {"page": page, "pages": pages, "perpage": per_page, "total": total,
                                    "photo": photos}})

    def _photo(self, params: dict) -> tuple[Person, dict] | None:
        for person in self.people.values():
            for photo in person.photos:
                if photo["id"] == params.get("photo_id"):
                    return person, photo
        return None

    def photo_info(self, params: dict) -> Response:
        found = self._photo(params)
        if found is None:
            return self._fail(1, "Photo not found")
        person, p = found
        taken = dt.datetime.fromtimestamp(p["posted"] - 3600, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        return self._ok({"photo": {
            "id": p["id"], "secret": p["secret"], "server": p["server"], "farm": p["farm"],
            "dateuploaded": str(p["posted"]), "isfavorite": 0, "license": "4", "safety_level": "0", "rotation": 0,
            "originalsecret": p["originalsecret"], "originalformat": "jpg",
            "owner": {"nsid": person.nsid, "username": person.username, "realname": person.realname,
                      "location": "", "iconserver": "7000", "iconfarm": 8, "path_alias": ""},
            "title": {"_content": p["title"]}, "description": {"_content": "Taken at Gelman \u2014 caf\u00e9"},
            "visibility": {"ispublic": 1, "isfriend": 0, "isfamily": 0},
            "dates": {"posted": str(p["posted"]), "taken": taken, "takengranularity": 0, "takenunknown": "0",
                      "lastupdate": str(p["posted"] + 60)},
            "views": "12", "comments": {"_content": "0"}, "notes": {"note": []}, "people": {"haspeople": 0},
            "tags": {"tag": [{"id": f"{p['id']}-gwu", "author": person.nsid, "raw": "gwu", "_content": "gwu",
                              "machine_tag": 0}]},
            "urls": {"url": [{"type": "photopage",
                              "_content": f"https://www.flickr.com/photos/{person.nsid}/{p['id']}/"}]},
            "media": "photo",
        }})

    def photo_sizes(self, params: dict) -> Response:
        found = self._photo(params)
        if found is None:
            return self._fail(1, "Photo not found")
        person, p = found
        sizes = []
        for label, suffix, edge in SIZES:
            edge = edge or 3000
            sizes.append({"label": label, "width": edge, "height": edge * 2 // 3,
                          "source": self.url + self.image_path(p, suffix),
                          "url": f"https://www.flickr.com/photos/{person.nsid}/{p['id']}/sizes/{suffix or 'z'}/",
                          "media": "photo"})
        return self._ok({"sizes": {"canblog": 0, "canprint": 0, "candownload": 1, "size": sizes}})

    def image(self, req: Request) -> Response:
        rng = random.Random(req.path)  # the same path always serves the same bytes
        body = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + rng.randbytes(2048 + rng.randrange(4096)) + b"\xff\xd9"
        return Response(200, body, {"Last-Modified": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(0))},
                        "image/jpeg")


def _params(req: Request) -> dict[str, str]:
    """flickrapi POSTs form data; GETs are accepted too."""
    merged = {k: v[0] for k, v in req.query.items()}
    if req.body:
        merged.update({k: v[0] for k, v in parse_qs(req.body.decode(), keep_blank_values=True).items()})
    return merged
