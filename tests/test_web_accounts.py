"""Admins manage other users over HTTP: a new password or new groups/admin role ends every session of that
user at once, and what they may see follows their groups on their next login; an admin cannot change their own
role here, nor can a member reach these forms."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store, web_repo
from tests.webkit import PASSWORD, client, login, post, user, web_config

NEW_PASSWORD = "a longer new passphrase"


def ids(store: Store, *, users: tuple[str, ...] = (), groups: tuple[str, ...] = ()) -> list[str]:
    with store.session() as s:
        found = [web_repo.user_named(s, n) for n in users] + [web_repo.group_named(s, g) for g in groups]
        return [row.id for row in found if row is not None]


def test_admin_resets_a_password_and_changes_groups_and_role_ending_sessions(config: Config, broker) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", admin=True, groups=("lib", "archive"))
    user(store, "bob", groups=("lib",))
    admin, bob = client(config, store), client(config, store)
    login(admin, "ada")
    assert login(bob, "bob").status_code == 303
    bob_id, ada_id = ids(store, users=("bob", "ada"))
    lib, archive = ids(store, groups=("lib", "archive"))
    assert post(admin, "/sets", {"name": "Archive set", "group": archive}).status_code == 303
    assert post(admin, "/sets", {"name": "Lib set", "group": lib}).status_code == 303
    assert bob.get("/sets/archive-set").status_code == 404 and bob.get("/sets/lib-set").status_code == 200
    assert bob.get(f"/admin/users/{ada_id}").status_code == 404  # a member does not reach it
    assert post(bob, f"/admin/users/{ada_id}/password", {"password": NEW_PASSWORD}).status_code == 404

    page = admin.get(f"/admin/users/{bob_id}").text
    assert f'value="{lib}" checked' in page and f'value="{archive}">' in page
    response = post(admin, f"/admin/users/{bob_id}/access", {"groups": [archive]}, page=f"/admin/users/{bob_id}")
    assert response.status_code == 303 and "sessions ended" in admin.get(response.headers["location"]).text
    assert bob.get("/").status_code == 303  # logged out at once
    login(bob, "bob")
    assert bob.get("/sets/archive-set").status_code == 200 and bob.get("/sets/lib-set").status_code == 404
    assert bob.get("/ops").status_code == 404

    post(admin, f"/admin/users/{bob_id}/access", {"groups": [archive], "is_admin": "on"},
         page=f"/admin/users/{bob_id}")
    assert bob.get("/").status_code == 303
    login(bob, "bob")
    assert bob.get("/ops").status_code == 200 and bob.get("/sets/lib-set").status_code == 200  # admins see all

    short = post(admin, f"/admin/users/{bob_id}/password", {"password": "short"}, page=f"/admin/users/{bob_id}")
    assert short.status_code == 400 and bob.get("/").status_code == 200  # refused: nothing changed
    response = post(admin, f"/admin/users/{bob_id}/password", {"password": NEW_PASSWORD},
                    page=f"/admin/users/{bob_id}")
    assert response.status_code == 303 and bob.get("/").status_code == 303
    assert login(bob, "bob", PASSWORD).status_code == 401 and bob.get("/").status_code == 303  # the old one
    assert login(bob, "bob", NEW_PASSWORD).status_code == 303 and bob.get("/").status_code == 200

    assert admin.get(f"/admin/users/{ada_id}").status_code == 400  # not one's own role
    own = post(admin, f"/admin/users/{ada_id}/access", {"groups": [lib]}, page="/admin")
    assert own.status_code == 400
    assert admin.get("/ops").status_code == 200  # still an admin, still logged in
    store.close()
