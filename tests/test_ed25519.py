"""The pure-Python Ed25519 signer: RFC 8032's test vectors, and ``cryptography`` agreeing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakeprovider import _ed25519


@pytest.mark.parametrize(
    ("seed", "public", "message", "signature"),
    [
        # RFC 8032, 7.1, TEST 1 and TEST 2
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
            "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
            "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
        ),
    ],
)
def test_rfc_8032_vectors(seed: str, public: str, message: str, signature: str) -> None:
    key = bytes.fromhex(seed)
    assert _ed25519.public_key(key).hex() == public
    assert _ed25519.sign(key, bytes.fromhex(message)).hex() == signature


cryptography = pytest.importorskip("cryptography")
from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: E402
    Ed25519PrivateKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), message=st.binary(max_size=300))
def test_cryptography_computes_the_same_key_and_signature(seed: bytes, message: bytes) -> None:
    theirs = Ed25519PrivateKey.from_private_bytes(seed)
    public = theirs.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    assert _ed25519.public_key(seed) == public
    assert _ed25519.sign(seed, message) == theirs.sign(message)


def test_a_seed_must_be_32_bytes() -> None:
    with pytest.raises(ValueError, match=r"^an Ed25519 private key is 32 bytes, got 31$"):
        _ed25519.sign(b"x" * 31, b"")
