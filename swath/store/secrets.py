"""Credential values at rest: sealed with Fernet keys from SWATH_SECRET_KEY or SWATH_SECRET_KEY_FILE.

A stored value is a (scheme, text) pair: `fernet` and a Fernet token (AES-128-CBC + HMAC-SHA256, so a wrong
key is detected, never silently decrypted to garbage), or `plain` for rows written before encryption, which
still read (with a warning) until `swath secrets migrate` seals them. `env:VAR` references need no key.
Several keys may be given, comma-separated, newest first: the first seals, all of them open (key rotation).
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.core.paths import make_dirs_inside
from swath.messages import codes

log = logging.getLogger(__name__)
PLAIN, FERNET = "plain", "fernet"
KEY_VARIABLES = "SWATH_SECRET_KEY or SWATH_SECRET_KEY_FILE"
KEYGEN = "`swath secrets keygen`"
_MAX_KEY_FILE_BYTES = 64 * 1024  # a key file holds a few 44-character keys; more is not a key file


class CredentialKeyError(SwathError):
    """The key for credential values at rest is missing, unsafe or wrong."""


class CredentialKeyMissing(CredentialKeyError):
    code = codes.CREDENTIAL_KEY_MISSING


class CredentialKeyInvalid(CredentialKeyError):
    code = codes.CREDENTIAL_KEY_INVALID


def generate_key() -> str:
    """A new random key, as SWATH_SECRET_KEY takes it."""
    return Fernet.generate_key().decode("ascii")


def read_key_file(path: Path) -> str:
    """The key file's text; refused unless it is a regular file only its owner may read or write."""
    try:
        fd = os.open(path, os.O_RDONLY)  # a symlink is followed (Kubernetes mounts secrets so); its target is checked
    except OSError as exc:
        raise CredentialKeyInvalid(f"SWATH_SECRET_KEY_FILE {path} cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())  # the file we opened, not whatever the path names a moment later
        if not stat.S_ISREG(info.st_mode):
            raise CredentialKeyInvalid(f"SWATH_SECRET_KEY_FILE {path} is not a regular file")
        if info.st_mode & 0o077:
            raise CredentialKeyInvalid(f"SWATH_SECRET_KEY_FILE {path} is open to group or others (mode "
                                       f"{stat.S_IMODE(info.st_mode):04o}); run `chmod 600 {path}`")
        data = fh.read(_MAX_KEY_FILE_BYTES + 1)
    if len(data) > _MAX_KEY_FILE_BYTES:
        raise CredentialKeyInvalid(f"SWATH_SECRET_KEY_FILE {path} is too large to be a key file")
    return data.decode("ascii", errors="replace")


def data_root_key(config: Config) -> Path:
    """Where `swath web` keeps the key it makes on a first run (no key configured): under the data root."""
    return config.data_root / ".swath" / "secret.key"


def ensure_key(config: Config) -> tuple[Path, bool] | None:
    """With no key configured: the data root's key file, made now (mode 0600, never through a link) when missing;
    (its path, whether it was made). None when SWATH_SECRET_KEY or SWATH_SECRET_KEY_FILE is set."""
    if config.secret_key or config.secret_key_file:
        return None
    path = data_root_key(config)
    make_dirs_inside(config.data_root, path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        load_keys(config)  # the one there: checked (a regular file, 0600, keys)
        return path, False
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(generate_key() + "\n")
    return path, True


def load_keys(config: Config) -> list[str]:
    """The configured keys, newest first; else those of the data root's key file when there is one (`swath web`
    made it); [] when there is none."""
    if config.secret_key and config.secret_key_file:
        raise CredentialKeyInvalid(f"set one of {KEY_VARIABLES}, not both")
    fallback = data_root_key(config)
    if not config.secret_key and not config.secret_key_file and os.path.lexists(fallback):
        where, text = f"the key file {fallback}", read_key_file(fallback)
    elif config.secret_key_file:
        where, text = f"SWATH_SECRET_KEY_FILE {config.secret_key_file}", read_key_file(Path(config.secret_key_file))
    else:
        where, text = "SWATH_SECRET_KEY", config.secret_key
    keys = [k.strip() for k in text.replace("\n", ",").split(",") if k.strip()]
    for key in keys:
        try:
            Fernet(key)
        except (ValueError, TypeError):
            # never quote the value: it is meant to be a secret even when malformed
            raise CredentialKeyInvalid(f"{where} holds a value that is not a key (44 characters of URL-safe "
                                       f"base64); make one with {KEYGEN}") from None
    return keys


@dataclass(frozen=True)
class SecretBox:
    """Seals and opens credential values with the configured keys (none: only reading legacy plain rows)."""

    keys: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def from_config(cls, config: Config) -> SecretBox:
        return cls(keys=tuple(load_keys(config)))

    def require(self, what: str) -> None:
        """Refuse early (before prompting for a value, say) when no key is configured."""
        if not self.keys:
            raise CredentialKeyMissing(f"no key to encrypt {what} with: set {KEY_VARIABLES} (make one with "
                                       f"{KEYGEN}), or give the credential as NAME=env:VARIABLE")

    def seal(self, value: str, *, what: str) -> tuple[str, str]:
        """(scheme, text) to store for `value`; `what` names it in errors ("credential 'api_key'")."""
        self.require(what)
        return FERNET, self._fernet().encrypt(value.encode("utf-8")).decode("ascii")

    def open(self, scheme: str, text: str, *, what: str) -> str:
        """The value of a stored (scheme, text); a legacy plain value reads, with a warning."""
        if scheme == PLAIN:
            log.warning("%s is stored in plain text; run `swath secrets migrate` with %s set to encrypt it",
                        what, KEY_VARIABLES)
            return text
        if scheme != FERNET:
            raise CredentialKeyInvalid(f"{what} is stored with scheme {scheme!r}, which this swath cannot read")
        if not self.keys:
            raise CredentialKeyMissing(f"{what} is encrypted: set {KEY_VARIABLES} to the key it was stored with")
        try:
            return self._fernet().decrypt(text.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise CredentialKeyInvalid(f"{what} does not decrypt with the key(s) in {KEY_VARIABLES}: it was "
                                       "stored with another key (give that key too, after the new one)") from None

    def reseal(self, scheme: str, text: str, *, what: str) -> tuple[str, str] | None:
        """The (scheme, text) that seals this value under the newest key, or None if it already is."""
        self.require(what)
        if scheme == FERNET:
            try:
                Fernet(self.keys[0]).decrypt(text.encode("ascii"))
                return None
            except InvalidToken:
                pass
        value = self.open(scheme, text, what=what) if scheme == FERNET else text
        return self.seal(value, what=what)

    def _fernet(self) -> MultiFernet:
        return MultiFernet([Fernet(k) for k in self.keys])
