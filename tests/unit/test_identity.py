"""Node identity: key-derived node IDs, signatures, the key file, and ``dafka-keys``."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from nacl.signing import SigningKey

from dafka.cli.keys import main as keys_main
from dafka.errors import ConfigError
from dafka.ids import is_node_id
from dafka.security import identity
from dafka.security.identity import Identity, node_id_bytes_for, node_id_for, verify
from dafka.storage.state_dir import StateDir

SEED = bytes(range(32))
# Pinned: the same IDs as in tests/data/wire/signed_*.hex.
SEED_PUBLIC = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
SEED_NODE_ID = "2CBD5DA36C6F8190ADAF1BF32B679DE6"


@pytest.fixture
def umask_zero() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


# ------------------------------------------------------------------ node IDs


def test_node_id_of_the_fixed_seed_is_pinned() -> None:
    ident = Identity.from_seed(SEED)
    assert ident.public_key.hex() == SEED_PUBLIC
    assert ident.node_id == SEED_NODE_ID
    assert node_id_for(bytes.fromhex(SEED_PUBLIC)) == SEED_NODE_ID


def test_node_id_derivation_spelled_out() -> None:
    """BLAKE2b-128 with person b"dafka-node-id", then the UUIDv8 version and variant bits."""
    public = bytes.fromhex(SEED_PUBLIC)
    digest = bytearray(hashlib.blake2b(public, digest_size=16, person=b"dafka-node-id").digest())
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    assert node_id_for(public) == digest.hex().upper()
    assert node_id_bytes_for(public) == bytes(digest)


@given(st.binary(min_size=32, max_size=32))
def test_node_id_format_is_a_uuid_v8_in_reference_form(public_key: bytes) -> None:
    node = node_id_for(public_key)
    assert is_node_id(node)  # 32 upper-case hex characters, like the reference's IDs
    assert node == node.upper() and len(node) == 32
    as_uuid = uuid.UUID(hex=node)
    assert as_uuid.variant == uuid.RFC_4122  # RFC 9562 keeps the same variant bits
    assert (as_uuid.int >> 76) & 0xF == 8  # version 8
    assert node_id_bytes_for(public_key) == bytes.fromhex(node)


@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32))
def test_node_id_is_deterministic_and_tells_keys_apart(a: bytes, b: bytes) -> None:
    assert node_id_for(a) == node_id_for(bytes(a))
    assert (node_id_for(a) == node_id_for(b)) == (a == b)


@pytest.mark.parametrize("key", [b"", bytes(31), bytes(33), bytes(64)])
def test_node_id_needs_a_32_byte_key(key: bytes) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        node_id_for(key)


# ---------------------------------------------------------------- identities


def test_identity_from_seed_is_deterministic() -> None:
    a, b = Identity.from_seed(SEED), Identity.from_seed(SEED)
    assert a == b and hash(a) == hash(b)
    assert a.sign(b"data") == b.sign(b"data")
    assert a.node_id == node_id_for(a.public_key)
    assert a.node_id_bytes == bytes.fromhex(a.node_id)


def test_generated_identities_differ() -> None:
    a, b = Identity.generate(), Identity.generate()
    assert a != b and a.node_id != b.node_id
    assert len(a.public_key) == 32 and is_node_id(a.node_id)


def test_repr_never_shows_the_secret() -> None:
    ident = Identity.from_seed(SEED)
    text = repr(ident)
    assert SEED_NODE_ID in text
    assert SEED.hex() not in text and "seed" not in text.lower()


@pytest.mark.parametrize("seed", [b"", bytes(31), bytes(33), "0" * 32])
def test_identity_needs_a_32_byte_seed(seed: bytes) -> None:
    with pytest.raises(ValueError):
        Identity.from_seed(seed)


def test_sign_matches_pynacl_and_verifies() -> None:
    ident = Identity.from_seed(SEED)
    signature = ident.sign(b"message")
    assert len(signature) == 64
    assert signature == SigningKey(SEED).sign(b"message").signature
    assert verify(ident.public_key, b"message", signature)
    assert verify(ident.public_key, bytearray(b"message"), memoryview(signature))


def test_verify_rejects_every_tampering() -> None:
    ident, other = Identity.from_seed(SEED), Identity.generate()
    signature = ident.sign(b"message")
    assert not verify(ident.public_key, b"messagf", signature)
    assert not verify(ident.public_key, b"message!", signature)
    assert not verify(other.public_key, b"message", signature)
    flipped = bytearray(signature)
    flipped[10] ^= 1
    assert not verify(ident.public_key, b"message", bytes(flipped))


@pytest.mark.parametrize(
    ("public_key", "data", "signature"),
    [
        (b"", b"m", bytes(64)),
        (bytes(31), b"m", bytes(64)),
        (bytes(32), b"m", bytes(63)),
        (bytes(32), b"m", bytes(65)),
        (b"\xff" * 32, b"m", bytes(64)),  # not a curve point
        (None, b"m", bytes(64)),
        (bytes(32), "m", bytes(64)),
        (bytes(32), None, bytes(64)),
        (bytes(32), b"m", None),
        (12, 34, 56),
    ],
)
def test_verify_never_raises(public_key: object, data: object, signature: object) -> None:
    assert verify(public_key, data, signature) is False  # type: ignore[arg-type]


@given(st.binary(max_size=40), st.binary(max_size=40), st.binary(max_size=80))
def test_verify_of_random_bytes_is_false(public_key: bytes, data: bytes, signature: bytes) -> None:
    assert verify(public_key, data, signature) is False


# ------------------------------------------------------------------ key file


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_load_or_create_makes_a_private_key_file_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = identity.load_or_create(state)
    key_file = state / "node.key"
    assert _mode(key_file) == 0o600
    assert _mode(state) == 0o700
    assert identity.load_or_create(state) == first
    assert identity.load(state) == first
    assert identity.load_or_create(str(state)).node_id == first.node_id
    assert [p.name for p in state.iterdir()] == ["node.key"]  # no temporary file left


def test_key_file_is_0600_whatever_the_umask(tmp_path: Path, umask_zero: None) -> None:
    identity.load_or_create(tmp_path)
    assert _mode(tmp_path / "node.key") == 0o600


def test_key_file_layout(tmp_path: Path) -> None:
    ident = identity.create(tmp_path, Identity.from_seed(SEED))
    assert (tmp_path / "node.key").read_text() == (
        f"dafka-node-key-v1\nseed {SEED.hex()}\npublic {SEED_PUBLIC}\nnode_id {SEED_NODE_ID}\n"
    )
    assert identity.load(tmp_path) == ident
    assert identity.load(tmp_path).sign(b"x") == ident.sign(b"x")


def test_create_refuses_to_replace_a_key(tmp_path: Path) -> None:
    identity.create(tmp_path, Identity.from_seed(SEED))
    before = (tmp_path / "node.key").read_bytes()
    with pytest.raises(ConfigError, match="already exists"):
        identity.create(tmp_path)
    assert (tmp_path / "node.key").read_bytes() == before


def test_load_without_a_key_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dafka-keys create") as info:
        identity.load(tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o602, 0o620])
def test_key_file_others_may_access_is_refused(tmp_path: Path, mode: int) -> None:
    identity.create(tmp_path, Identity.from_seed(SEED))
    key_file = tmp_path / "node.key"
    before = key_file.read_bytes()
    key_file.chmod(mode)
    for load in (identity.load, identity.load_or_create):
        with pytest.raises(ConfigError, match="chmod 600") as info:
            load(tmp_path)
        assert f"{mode:04o}" in str(info.value)
    assert key_file.read_bytes() == before  # never replaced
    key_file.chmod(0o400)  # owner read-only is fine
    assert identity.load(tmp_path) == Identity.from_seed(SEED)


def _good_text() -> str:
    return Identity.from_seed(SEED)._key_file_text()


def _flip_seed_char(text: str) -> str:
    lines = text.split("\n")
    seed = lines[1]
    lines[1] = seed[:-1] + ("0" if seed[-1] != "0" else "1")
    return "\n".join(lines)


@pytest.mark.parametrize(
    "content",
    [
        b"",  # an interrupted write on a file system without hard links
        b"garbage\n",
        b"\xff\xfe\x00binary",
        _good_text().encode()[:40],  # cut short
        _flip_seed_char(_good_text()).encode(),  # one hex digit of the seed changed
        _good_text().replace(SEED_PUBLIC, "00" * 32).encode(),  # public line disagrees
        _good_text().replace(SEED_NODE_ID, "0" * 32).encode(),  # node ID line disagrees
        _good_text().replace("v1", "v2").encode(),
        _good_text().replace(SEED.hex(), SEED.hex()[:-2]).encode(),  # 31-byte seed
        _good_text().replace(SEED.hex(), "zz" * 32).encode(),
        (_good_text() + "extra\n").encode(),
        b"x" * 10_000,  # far too big
    ],
    ids=lambda c: repr(c[:24]),
)
def test_corrupt_key_file_is_an_error_never_a_new_identity(tmp_path: Path, content: bytes) -> None:
    key_file = tmp_path / "node.key"
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, content)
    os.close(fd)
    for load in (identity.load, identity.load_or_create):
        with pytest.raises(ConfigError) as info:
            load(tmp_path)
        assert "\n" not in str(info.value)
    assert key_file.read_bytes() == content


def test_key_file_without_trailing_newline_still_loads(tmp_path: Path) -> None:
    key_file = tmp_path / "node.key"
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, _good_text().rstrip("\n").encode())
    os.close(fd)
    assert identity.load(tmp_path) == Identity.from_seed(SEED)


def test_key_path_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "node.key").mkdir()
    with pytest.raises(ConfigError):
        identity.load(tmp_path)
    with pytest.raises(ConfigError):
        identity.load_or_create(tmp_path)


def test_works_inside_a_locked_state_dir(tmp_path: Path) -> None:
    with StateDir(tmp_path / "s") as state:
        ident = identity.load_or_create(state.path)
    with StateDir(tmp_path / "s") as state:
        assert identity.load_or_create(state.path) == ident


# ------------------------------------------------------------------- dafka-keys


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(keys_main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_create_then_show(tmp_path: Path) -> None:
    state = str(tmp_path / "s")
    code, out, _ = _run("create", "--state-dir", state)
    assert code == 0
    ident = identity.load(state)
    assert out == f"node_id     {ident.node_id}\npublic_key  {ident.public_key.hex()}\n"
    code, shown, _ = _run("show", "--state-dir", state)
    assert (code, shown) == (0, out)
    code, js, _ = _run("show", "-s", state, "--json")
    assert code == 0
    assert json.loads(js) == {"node_id": ident.node_id, "public_key": ident.public_key.hex()}


def test_cli_state_dir_from_environment(tmp_path: Path) -> None:
    state = str(tmp_path / "s")
    result = CliRunner().invoke(keys_main, ["create"], env={"DAFKA_STATE_DIR": state})
    assert result.exit_code == 0
    assert identity.load(state).node_id in result.stdout


def test_cli_create_twice_is_one_line_error(tmp_path: Path) -> None:
    state = str(tmp_path / "s")
    assert _run("create", "-s", state)[0] == 0
    code, out, err = _run("create", "-s", state)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "already exists" in err
    assert err.count("\n") == 1


def test_cli_create_while_the_node_runs_is_refused(tmp_path: Path) -> None:
    with StateDir(tmp_path / "s"):
        code, _, err = _run("create", "-s", str(tmp_path / "s"))
    assert code == 2 and "in use by another process" in err
    assert not (tmp_path / "s" / "node.key").exists()


def test_cli_show_errors_are_one_line(tmp_path: Path) -> None:
    code, out, err = _run("show", "-s", str(tmp_path / "nothing"))
    assert code == 2 and out == ""
    assert err.startswith("error: no node key") and err.count("\n") == 1
    identity.create(tmp_path / "s")
    (tmp_path / "s" / "node.key").chmod(0o644)
    code, _, err = _run("show", "-s", str(tmp_path / "s"))
    assert code == 2 and "chmod 600" in err and err.count("\n") == 1


def test_cli_needs_a_state_dir() -> None:
    code, _, err = _run("show")
    assert code == 2 and "--state-dir" in err
