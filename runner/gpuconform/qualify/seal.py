"""A qualification record sealed: its one written form, its content hash,
its GnuPG signature, and the check of all three (verify_record).

The content hash is sha256 over the canonical serialisation of the record
without its "content_hash" (json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=True)), stored as "content_hash": {"algorithm": "sha256",
"value": HEX}. The file is always written in one form (sort_keys, indent=1,
ASCII, one newline at the end), so verify_record rejects a change of any
byte: one that changes the content breaks the hash, one that keeps it (white
space) breaks the form. The signature is gpg's detached, armored signature of
the file's bytes, beside it as qualification.json.asc; the hash alone proves
nothing against someone who recomputes it, the signature does.

verify_record checks, in this order: the file can be read, is JSON (no NaN,
no number out of range), is a qualification record of version 1, was
written by this suite version (another version's record is verified with
that version), has its content hash, which matches, is in the written form,
has every part a record has, and, where qualification.json.asc is beside it
or its "signing" says it was signed, gpg accepts the signature (GOODSIG and
VALIDSIG); gpg is then needed, and GNUPGHOME chooses the keyring.

Every problem is a RecordError whose message is one line naming the file.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import __version__
from ..core.jsondoc import type_name
from ..core.tool import tool_faults

__all__ = ["RecordError", "RECORD_FORMAT", "RECORD_VERSION", "SUITE_NAME", "SIGNATURE_SUFFIX",
           "Verified", "canonical", "check_record", "check_signing_key", "content_hash",
           "record_text", "seal", "sign_text", "verify_record"]

RECORD_FORMAT = "gpuconform-qualification"
RECORD_VERSION = 1
SUITE_NAME = "gpuconform"
SIGNATURE_SUFFIX = ".asc"
HASH_ALGORITHM = "sha256"
GPG_TIMEOUT_S = 120  # a hang guard (a pinentry waiting for a passphrase nobody types)
PROBE_TEXT = "gpuconform: can this key sign? (a probe, thrown away)\n"


class RecordError(Exception):
    """A record that cannot be built, written or verified; str() is one line."""


# ------------------------------------------------------------ serialisation


def canonical(record: Mapping[str, Any]) -> str:
    """The text hashed: sorted keys, no white space, ASCII. ValueError for a
    value JSON cannot hold (NaN, infinity), TypeError for a non-JSON type."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def content_hash(record: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical text of record without "content_hash"."""
    body = {k: v for k, v in record.items() if k != "content_hash"}
    return hashlib.sha256(canonical(body).encode("ascii")).hexdigest()


def record_text(record: Mapping[str, Any]) -> str:
    """The one form a record file is written in."""
    return json.dumps(record, sort_keys=True, indent=1, ensure_ascii=True,
                      allow_nan=False) + "\n"


def seal(record: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in record.items() if k != "content_hash"}
    try:
        out["content_hash"] = {"algorithm": HASH_ALGORITHM, "value": content_hash(out)}
    except (TypeError, ValueError) as e:
        raise RecordError(f"the record holds a value JSON cannot hold: {e}") from None
    return out


# ---------------------------------------------------------------- signing


def _gpg() -> str:
    gpg = shutil.which("gpg")
    if gpg is None:
        raise FileNotFoundError("gpg")
    return gpg


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _sign(text: str, key: str, what: str) -> str:
    """gpg's armored detached signature of text by key; RecordError "WHAT: why"."""
    if not key.strip():
        raise RecordError(f"{what}: an empty key id names no key")
    with tool_faults(RecordError, f"{what}: gpg is not on PATH (apt-get install gnupg)",
                     f"{what}: gpg did not finish in {GPG_TIMEOUT_S} s (waiting for a "
                     "passphrase? unlock the key in gpg-agent first)"):
        p = subprocess.run([_gpg(), "--batch", "--yes", "--local-user", key, "--armor",
                            "--detach-sign", "--output", "-"],
                           input=text.encode("ascii"), capture_output=True,
                           timeout=GPG_TIMEOUT_S)
    sig = p.stdout.decode("ascii", "replace")
    if p.returncode != 0 or "BEGIN PGP SIGNATURE" not in sig:
        err = p.stderr.decode("utf-8", "replace")
        raise RecordError(f"{what}: {_last_line(err)}")
    return sig


def sign_text(text: str, key: str, target: Path) -> str:
    """gpg's armored detached signature of text (the bytes target will hold)."""
    return _sign(text, key, f"cannot sign {target} with key {key}")


def check_signing_key(key: str) -> None:
    """RecordError unless gpg signs with key now: a signature of a probe text,
    made as sign_text makes the record's (the same gpg, keyring and options),
    then thrown away. For before a run: a key gpg lacks, an expired key, no
    gpg at all are found before the run, not after it."""
    _sign(PROBE_TEXT, key, f"cannot sign with key {key}")


# ---------------------------------------------------------------- verifying


def _first_difference(text: str, form: str) -> int:
    """The 1-based line where text first differs from form."""
    a, b = text.split("\n"), form.split("\n")
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            return i
    return min(len(a), len(b)) + 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"number {text[:40]} is out of range")
    return v


def _parse(path: Path, raw: bytes) -> tuple[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"{path}: not JSON: byte {e.start} is not UTF-8") from None
    try:
        return text, json.loads(text, parse_constant=_reject_constant,
                                parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}:{e.lineno}: not JSON: {e.msg} (column {e.colno})") from None
    except (ValueError, RecursionError) as e:
        raise RecordError(f"{path}: not JSON: {e}") from None


def _check_kind(path: Path, data: Any) -> None:
    """A gpuconform qualification record of this version, from this suite version."""
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        got = data.get("format") if isinstance(data, dict) else None
        shown = f" (format {json.dumps(got)[:60]})" if got is not None else ""
        raise RecordError(f"{path}: not a gpuconform qualification record{shown}")
    version = data.get("version")
    if version != RECORD_VERSION or isinstance(version, bool):
        raise RecordError(f"{path}: qualification record version {json.dumps(version)[:20]}: "
                          f"this gpuconform reads version {RECORD_VERSION}")
    suite = data.get("suite")
    written_by = suite.get("version") if isinstance(suite, dict) else None
    if not isinstance(written_by, str) or (suite or {}).get("name") != SUITE_NAME:
        raise RecordError(f"{path}: not a gpuconform qualification record (no suite version)")
    if written_by != __version__:
        raise RecordError(f"{path}: written by gpuconform {written_by[:40]}, this is "
                          f"{__version__}: verify it with that version")


# The record's parts and their JSON types (None: null allowed).
_PARTS: dict[str, tuple[type, ...]] = {
    "run": (dict,), "level": (dict,), "machine": (dict,), "versions": (dict,),
    "areas": (dict,), "soaks": (list,), "totals": (dict,), "outcome": (dict, type(None)),
    "signing": (dict, type(None))}


def _check_parts(path: Path, data: Mapping[str, Any]) -> None:
    """Every part a record has, of its type: a hash made right over something
    else is no record gpuconform wrote."""
    for key, types in _PARTS.items():
        if key not in data:
            raise RecordError(f"{path}: not a record gpuconform writes: no {key!r}")
        if not isinstance(data[key], types):
            raise RecordError(f"{path}: not a record gpuconform writes: {key!r} is "
                              f"{type_name(data[key])}")


def _check_hash(path: Path, data: dict[str, Any]) -> str:
    h = data.get("content_hash")
    if not isinstance(h, dict) or not isinstance(h.get("value"), str):
        raise RecordError(f"{path}: no content hash: not a record as gpuconform writes it")
    if h.get("algorithm") != HASH_ALGORITHM:
        raise RecordError(f"{path}: content hash algorithm {json.dumps(h.get('algorithm'))[:40]}"
                          f": this gpuconform checks {HASH_ALGORITHM}")
    try:
        digest = content_hash(data)
    except (TypeError, ValueError, RecursionError) as e:  # nested too deep to serialise
        raise RecordError(f"{path}: not a record as gpuconform writes it: {e}") from None
    if digest != h["value"]:
        raise RecordError(f"{path}: content hash does not match: the record was changed after "
                          "it was written")
    return str(h["value"])


def _gpg_reason(status: Sequence[str], stderr: str) -> str:
    """gpg's reason for not accepting a signature, from its status lines."""
    for line in status:
        word, _, rest = line.partition(" ")
        if word == "BADSIG":
            return (f"BADSIG: bad signature by {rest}: the record or the signature was changed "
                    "after signing")
        if word == "NO_PUBKEY":
            return f"NO_PUBKEY {rest}: the signing key is not in this keyring (import it)"
        if word in ("EXPKEYSIG", "REVKEYSIG", "EXPSIG"):
            what = {"EXPKEYSIG": "the key has expired", "REVKEYSIG": "the key was revoked",
                    "EXPSIG": "the signature has expired"}[word]
            return f"{word} {rest}: {what}"
        if word == "NODATA":
            return "NODATA: not an OpenPGP signature"
    errsig = [line for line in status if line.startswith("ERRSIG ")]
    if errsig:
        return f"{errsig[0]}: {_last_line(stderr)}"
    return _last_line(stderr)


def _check_signature(path: Path, data: dict[str, Any]) -> str:
    """"signed by USER (key FPR)", "unsigned", or RecordError."""
    asc = path.with_name(path.name + SIGNATURE_SUFFIX)
    signing = data.get("signing")
    key = signing.get("key") if isinstance(signing, dict) else None
    if not asc.exists():
        if signing is not None:
            raise RecordError(f"{path}: signed with key {str(key)[:80]} (its \"signing\" says "
                              f"so) but {asc.name} is missing beside it")
        return "unsigned"
    with tool_faults(RecordError, f"{asc}: cannot check the signature: gpg is not on PATH "
                     "(apt-get install gnupg)",
                     f"{asc}: gpg did not finish checking the signature in {GPG_TIMEOUT_S} s"):
        p = subprocess.run([_gpg(), "--batch", "--no-auto-key-retrieve", "--status-fd", "1",
                            "--verify", str(asc), str(path)],
                           capture_output=True, timeout=GPG_TIMEOUT_S,
                           stdin=subprocess.DEVNULL)
    status = [line[len("[GNUPG:] "):] for line in p.stdout.decode("utf-8", "replace").splitlines()
              if line.startswith("[GNUPG:] ")]
    good = next((line.split(" ", 2) for line in status if line.startswith("GOODSIG ")), None)
    valid = next((line.split() for line in status if line.startswith("VALIDSIG ")), None)
    if p.returncode != 0 or good is None or valid is None:
        raise RecordError(f"{asc}: signature not accepted: "
                          f"{_gpg_reason(status, p.stderr.decode('utf-8', 'replace'))}")
    user = good[2] if len(good) > 2 else good[1]
    fpr = valid[1] if len(valid) > 1 else "?"
    return f"signed by {user} (key {fpr})"


@dataclass(frozen=True)
class Verified:
    """What verify_record found in a record it accepts."""

    path: Path
    level: str | None
    machine: str | None
    digest: str  # the content hash (HASH_ALGORITHM, hex), computed and matching the stored one
    signed: str  # "signed by USER (key FPR)" or "unsigned"

    def line(self) -> str:
        return (f"{self.path}: ok: gpuconform qualification record, level "
                f"{self.level or 'not recorded'}, machine {self.machine or '?'}, "
                f"{HASH_ALGORITHM} {self.digest}, {self.signed}")


def check_record(path: Path) -> Verified:
    """What a record gpuconform wrote and nobody changed since holds (its
    signature, where it has one, accepted by gpg); RecordError (one line
    naming the file and what is wrong) otherwise."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RecordError(f"{path}: cannot read: {e.strerror or e}") from None
    text, data = _parse(path, raw)
    _check_kind(path, data)
    digest = _check_hash(path, data)
    try:
        form = record_text(data)
    except (TypeError, ValueError, RecursionError) as e:  # hashed above: should not happen
        raise RecordError(f"{path}: not in the form gpuconform writes: {e}") from None
    if text != form:
        raise RecordError(f"{path}: not in the form gpuconform writes: changed after it was "
                          f"written (line {_first_difference(text, form)})")
    _check_parts(path, data)
    signed = _check_signature(path, data)
    name, key = data["level"].get("name"), data["machine"].get("key")
    return Verified(path, str(name) if name else None, str(key) if key else None, digest,
                    signed)


def verify_record(path: Path) -> str:
    """One line, "PATH: ok: ...", for a record gpuconform wrote and nobody
    changed since (and whose signature, where it has one, gpg accepts);
    RecordError (one line naming the file and what is wrong) otherwise."""
    return check_record(path).line()
