"""Ed25519 signatures (RFC 8032, section 5.1), in pure Python, for signing fal-shaped webhooks.

The fake signs a handful of webhooks per run, so a plain big-integer implementation (a few
milliseconds a signature) spares the runtime a dependency on a cryptography library. This is
the algorithm of RFC 8032's section 6 reference code in extended coordinates: deterministic,
and checked against the RFC's test vectors and the ``cryptography`` package in the tests. It
only signs (receivers verify with a library of their own); it is not constant-time, which is
fine for a test double's published test key and nothing else.
"""

from __future__ import annotations

import functools
import hashlib

__all__ = ["public_key", "sign"]

_P = 2**255 - 19
_D = -121665 * pow(121666, -1, _P) % _P
_Q = 2**252 + 27742317777372353535851937790883648493

Point = tuple[int, int, int, int]


def _add(a: Point, b: Point) -> Point:
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    k1 = (y1 - x1) * (y2 - x2) % _P
    k2 = (y1 + x1) * (y2 + x2) % _P
    k3 = 2 * t1 * t2 * _D % _P
    k4 = 2 * z1 * z2 % _P
    e, f, g, h = k2 - k1, k4 - k3, k4 + k3, k2 + k1
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _multiply(scalar: int, point: Point) -> Point:
    result: Point = (0, 1, 1, 0)
    while scalar > 0:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _compress(point: Point) -> bytes:
    x, y, z, _ = point
    inverse = pow(z, _P - 2, _P)
    x, y = x * inverse % _P, y * inverse % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _recover_x(y: int, sign: int) -> int:
    x2 = (y * y - 1) * pow(_D * y * y + 1, -1, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * pow(2, (_P - 1) // 4, _P) % _P
    return _P - x if x & 1 != sign else x


_GY = 4 * pow(5, -1, _P) % _P
_GX = _recover_x(_GY, 0)
_BASE: Point = (_GX, _GY, 1, _GX * _GY % _P)


def _expand(seed: bytes) -> tuple[int, bytes]:
    if len(seed) != 32:
        raise ValueError(f"an Ed25519 private key is 32 bytes, got {len(seed)}")
    digest = hashlib.sha512(seed).digest()
    scalar = int.from_bytes(digest[:32], "little")
    scalar &= (1 << 254) - 8
    scalar |= 1 << 254
    return scalar, digest[32:]


@functools.lru_cache(maxsize=8)
def public_key(seed: bytes) -> bytes:
    """The 32-byte public key of the private key ``seed`` (32 bytes)."""
    scalar, _ = _expand(seed)
    return _compress(_multiply(scalar, _BASE))


def sign(seed: bytes, message: bytes) -> bytes:
    """The 64-byte Ed25519 signature of ``message`` by the private key ``seed``."""
    scalar, prefix = _expand(seed)
    public = public_key(seed)
    r = int.from_bytes(hashlib.sha512(prefix + message).digest(), "little") % _Q
    encoded_r = _compress(_multiply(r, _BASE))
    h = int.from_bytes(hashlib.sha512(encoded_r + public + message).digest(), "little") % _Q
    return encoded_r + ((r + h * scalar) % _Q).to_bytes(32, "little")
