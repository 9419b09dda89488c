"""Flickr through flickrapi: a user's public photos with their info and sizes, and optionally the image
files themselves. Retries, rate limits, WARC writing and state commits are the engine's."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import Any

import flickrapi
import requests

from swath.harvesters.base import Harvester
from swath.harvesters.errors import BadResponse, Unauthorized
from swath.harvesters.pages import PageGuard, listing
from swath.harvesters.social import credential, mount_recording
from swath.harvesters.values import NESTED, as_number, as_text, field, kind_of
from swath.messages import codes
from swath.messages.model import Seed
from swath.platforms.flickr.declaration import PLATFORM

NOT_FOUND = {1}  # "User not found" / "Photo not found"
AUTH_FAILED = {96, 97, 98, 99, 100}  # bad signature, missing signature, bad token, no permission, bad key
PER_PAGE = 100


class FlickrHarvester(Harvester, declaration=PLATFORM):

    @cached_property
    def api(self) -> flickrapi.FlickrAPI:
        key, secret = credential(self.harvest.start.credentials, "key", "secret")
        api = flickrapi.FlickrAPI(key, secret, format="parsed-json", store_token=False,
                                  timeout=self.harvest.config.http_timeout)
        session = requests.Session()
        mount_recording(session, adapter=self.harvest.recording_adapter([]), default=PLATFORM.api_url,
                        base=PLATFORM.api_root(self.harvest.config))
        # flickrapi keeps one Session for the whole class; this harvest gets its own, recorded
        api.flickr_oauth.session = session
        return api

    def call(self, method: str, seed: Seed | None = None, **params: Any) -> dict | None:
        """One REST call; None (with a token_not_found warning) when Flickr says the user/photo is unknown."""
        try:
            return self.api.do_flickr_call(f"flickr.{method}", **params)
        except flickrapi.FlickrError as exc:
            code = int(exc.code) if str(exc.code or "").isdigit() else None
            if code in AUTH_FAILED:
                raise Unauthorized(f"Flickr refused the credentials (error {code})") from None
            if code in NOT_FOUND and seed is not None:
                self.harvest.warning(codes.TOKEN_NOT_FOUND, f"Flickr {method}: {exc}", seed.id)
                return None
            raise BadResponse(f"Flickr {method} failed: {exc}", seed_id=seed.id if seed else None) from None
        except RecursionError:  # flickrapi's json.loads of a hostile document
            raise BadResponse(f"Flickr {method}: the JSON is {NESTED}", seed_id=seed.id if seed else None) from None
        except (ValueError, AttributeError):  # not JSON, or JSON that is not an object (flickrapi's parse_json)
            raise BadResponse(f"Flickr {method}: the answer is not a JSON object",
                              seed_id=seed.id if seed else None) from None

    def user(self) -> None:
        incremental = bool(self.harvest.start.options.get("incremental"))
        sizes = list(self.harvest.start.options.get("sizes") or [])
        for seed in self.harvest.start.seeds:
            if self.harvest.stopping:
                return
            nsid = self.nsid(seed)
            if nsid is None:
                continue
            key = f"flickr.{nsid}.last_photo_id"
            last = self.harvest.state.get(key) if incremental else None
            newest = None
            with listing(self.harvest, what=f"Flickr photos of {nsid}", seed_id=seed.id) as guard:
                for photo_id, photo in self.public_photos(seed, nsid, guard):
                    if last and photo_id <= int(last):
                        break  # photos come newest first: the rest were harvested before
                    newest = newest or str(photo_id)
                    self.photo(seed, photo, sizes)
                    if self.harvest.stopping:
                        break
            if incremental and newest and not guard.looped:
                self.harvest.state.set(key, newest)

    def nsid(self, seed: Seed) -> str | None:
        """The seed's NSID: its uid, else looked up by username (and reported in uids)."""
        nsid = seed.uid
        if not nsid:
            if not seed.token:
                self.harvest.warning(codes.TOKEN_NOT_FOUND, "seed has neither uid nor token", seed.id)
                return None
            found = self.call("people.findByUsername", seed, username=str(seed.token))
            if found is None:
                return None
            nsid = as_text(field(found, "user", "nsid"))
            if nsid is None:
                self.harvest.error(codes.BAD_RESPONSE, f"Flickr gave {kind_of(field(found, 'user', 'nsid'))} "
                                                       "as the user's NSID", seed.id)
                return None
            self.harvest.uid_found(seed.id, nsid)
        info = self.call("people.getInfo", seed, user_id=nsid)
        if info is None:
            return None
        username = as_text(field(info, "person", "username", "_content"))  # optional: not text, not reported
        if seed.uid and username and username != seed.token:  # renamed, or a uid seed's name learnt
            self.harvest.token_update(seed.id, username)
        return nsid

    def public_photos(self, seed: Seed, nsid: str, guard: PageGuard) -> Iterator[tuple[int, dict]]:
        """(id, photo) of each public photo, paged against Flickr's `pages`; a page of photos served
        already ends the listing (PaginationLoop)."""
        page, pages = 1, 1
        while page <= pages and not self.harvest.stopping:
            guard.cursor(page)
            answer = self.call("people.getPublicPhotos", seed, user_id=nsid, page=page, per_page=PER_PAGE)
            if answer is None:
                return
            claimed, photos = as_number(field(answer, "photos", "pages")), field(answer, "photos", "photo")
            if claimed is None or not isinstance(photos, list) or not all(isinstance(p, dict) for p in photos):
                raise BadResponse("Flickr sent a page of photos without pages or photo", seed_id=seed.id)
            pages = claimed
            if not photos:
                return  # past the last photo, whatever `pages` claims
            ids = [number for p in photos if (number := as_number(p.get("id"))) is not None]
            if len(ids) < len(photos):
                raise BadResponse("Flickr sent a photo without a numeric id", seed_id=seed.id)
            guard.items(ids)
            yield from zip(ids, photos, strict=True)
            page += 1

    def photo(self, seed: Seed, photo: dict, sizes: list[str]) -> None:
        self.call("photos.getInfo", photo_id=photo["id"], secret=photo.get("secret"))
        self.harvest.count("photos")
        if not sizes:
            return
        answer = self.call("photos.getSizes", photo_id=photo["id"])
        if answer is None:  # only a call for a seed answers None (the seed's warning); kept for the types
            return
        available = answer["sizes"]["size"]
        for size in available:
            if size["label"] in sizes:
                resp = self.harvest.http.get(size["source"])  # recorded like every API call
                if resp.status_code != 200:
                    self.harvest.warning(codes.ITEM_FAILED, f"photo {photo['id']} {size['label']}: "
                                                            f"HTTP {resp.status_code}", seed.id)
