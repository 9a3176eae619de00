"""httpx and httpx2 clients made while an in-process fake is entered share their default TLS context
(``fakeprovider._tls``): one context for every default client, each made as the library makes
it, any other TLS setting passed on untouched, and certificates still verified for real hosts."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import sys
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakeprovider import _tls
from fakeprovider.inprocess import virtual_provider


def context_of(client: Any) -> ssl.SSLContext:
    """The TLS context of ``client``'s own transport (httpx's or httpx2's)."""
    context = client._transport._pool._ssl_context
    assert isinstance(context, ssl.SSLContext)
    return context


def test_default_clients_made_in_a_fake_share_one_context_and_none_outside() -> None:
    import httpx._transports.default as transports

    real = vars(transports)["create_ssl_context"]
    before = httpx.Client()
    with virtual_provider("slow-success") as fake:
        first, second = httpx.Client(), httpx.Client()
        asynchronous = httpx.AsyncClient()
        assert context_of(first) is context_of(second) is context_of(asynchronous)
        assert context_of(first) is not context_of(before)
        answer = second.post(f"{fake.url}/v1/jobs", json={"prompt": "a cat"})
        assert answer.status_code == 202
    after = httpx.Client()
    assert vars(transports)["create_ssl_context"] is real
    assert context_of(after) is not context_of(first)
    with virtual_provider("slow-success"):  # the next example's clients: the same context
        assert context_of(httpx.Client()) is context_of(first)
    for client in (before, first, second, after):
        client.close()
    asyncio.run(asynchronous.aclose())


def test_clients_share_a_context_only_with_clients_offering_the_same_protocols(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # httpcore sets the context's ALPN protocols at each connection from the pool's http2.
    # (httpx wants h2 importable to make an http2 client; none connects here)
    monkeypatch.setitem(sys.modules, "h2", sys.modules.get("h2") or types.ModuleType("h2"))
    with virtual_provider("slow-success"):
        plain = context_of(httpx.Client())
        both = context_of(httpx.Client(http2=True))
        assert both is not plain
        assert context_of(httpx.Client(http2=True)) is both
        assert context_of(httpx.AsyncClient(http2=True)) is both


def test_the_shared_context_is_the_one_the_library_makes() -> None:
    own = context_of(httpx.Client())
    with virtual_provider("slow-success"):
        shared = context_of(httpx.Client())
    assert shared is not own
    assert shared.verify_mode == own.verify_mode == ssl.CERT_REQUIRED
    assert shared.check_hostname
    assert own.check_hostname
    assert shared.cert_store_stats() == own.cert_store_stats()
    assert shared.minimum_version == own.minimum_version
    assert shared.options == own.options


def test_a_client_with_tls_settings_of_its_own_gets_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mine = ssl.create_default_context()
    with virtual_provider("slow-success"):
        default = context_of(httpx.Client())
        unverified = context_of(httpx.Client(verify=False))
        assert unverified is not default
        assert unverified.verify_mode == ssl.CERT_NONE
        assert not unverified.check_hostname
        assert context_of(httpx.Client(verify=mine)) is mine
        assert context_of(httpx.Client(trust_env=False)) is not default
        # another CA bundle named by the environment: a context of its own, shared in turn
        import certifi

        monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
        bundle = context_of(httpx.Client())
        assert bundle is not default
        assert context_of(httpx.Client()) is bundle
        assert context_of(httpx.Client(trust_env=False)) is context_of(
            httpx.Client(trust_env=False)
        )


def test_a_ca_bundle_rewritten_at_the_same_path_makes_another_context(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import certifi

    bundle = tmp_path / "ca.pem"
    certificates = Path(certifi.where()).read_bytes()
    bundle.write_bytes(certificates)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with virtual_provider("slow-success"):
        first = context_of(httpx.Client())
        assert context_of(httpx.Client()) is first
        bundle.write_bytes(certificates[: certificates.rindex(b"-----BEGIN CERTIFICATE-----")])
        kept = len(_tls._contexts)
        rewritten = context_of(httpx.Client())
        assert rewritten is not first
        assert rewritten.cert_store_stats()["x509_ca"] == first.cert_store_stats()["x509_ca"] - 1
        assert len(_tls._contexts) == kept  # (in place of the one before: one a kind)


def test_httpx2_clients_made_in_a_fake_share_one_context() -> None:
    httpx2 = pytest.importorskip("httpx2")
    import httpx2._transports.default as transports

    real = vars(transports)["create_ssl_context"]
    with virtual_provider("slow-success") as fake:
        first, second = httpx2.Client(), httpx2.Client()
        assert context_of(first) is context_of(second)
        assert context_of(httpx2.Client(verify=False)) is not context_of(first)
        answer = first.post(f"{fake.url}/v1/jobs", json={"prompt": "a cat"})
        assert answer.status_code == 202
    assert vars(transports)["create_ssl_context"] is real
    assert context_of(httpx2.Client()) is not context_of(first)


def layout() -> Any:
    """A module laid out as httpx's transports are: ``create_ssl_context`` looked up by the
    transports' ``__init__`` (which takes ``http1`` and ``http2``) at each call."""
    module: Any = types.ModuleType("transports")

    def create_ssl_context(**_: Any) -> ssl.SSLContext:
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

    class HTTPTransport:
        def __init__(self, http1: bool = True, http2: bool = False, **tls: Any) -> None:
            self.context = module.create_ssl_context(**tls)

    module.create_ssl_context = create_ssl_context
    module.HTTPTransport = HTTPTransport
    return module


def test_only_a_transports_default_call_gets_a_shared_context() -> None:
    module = layout()
    real = module.create_ssl_context
    _tls.install(module)
    try:
        wrapped = module.create_ssl_context
        _tls.install(module)  # wrapped once only
        assert module.create_ssl_context is wrapped is not real

        def made(**arguments: Any) -> ssl.SSLContext:
            context: ssl.SSLContext = module.HTTPTransport(**arguments).context
            return context

        assert made(verify=True, cert=None, trust_env=False) is made(trust_env=False)
        assert made(http2=True) is made(http2=True) is not made()
        assert made(http1=False, http2=True) is not made(http2=True)
        assert made(verify=False) is not made(verify=False)
        assert made(trust_env=True) is not made(trust_env=False)
        # not called by a transport's __init__: not shared
        assert wrapped(verify=True) is not wrapped(verify=True)
    finally:
        _tls.uninstall(module)
    assert module.create_ssl_context is real


def test_a_layout_without_transports_is_left_as_it_is() -> None:
    module = layout()
    del module.HTTPTransport
    real = module.create_ssl_context
    _tls.install(module)
    assert module.create_ssl_context is real
    _tls.uninstall(module)
    empty: Any = types.ModuleType("empty")
    _tls.install(empty)  # no create_ssl_context: nothing to wrap
    assert not hasattr(empty, "create_ssl_context")
    _tls.uninstall(empty)


def test_a_wrapper_put_back_after_the_fake_left_shares_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A test's monkeypatch of the function while a fake is entered, undone after the fake
    left, puts the wrapper back: it then passes every call on."""
    import httpx._transports.default as transports

    real = vars(transports)["create_ssl_context"]
    with virtual_provider("slow-success"):
        wrapper = vars(transports)["create_ssl_context"]
        monkeypatch.setattr(transports, "create_ssl_context", real)
        assert context_of(httpx.Client()) is not context_of(httpx.Client())
    monkeypatch.undo()
    try:
        assert vars(transports)["create_ssl_context"] is wrapper
        assert context_of(httpx.Client()) is not context_of(httpx.Client())
        with virtual_provider("slow-success"):  # and it shares again while a fake is entered
            assert context_of(httpx.Client()) is context_of(httpx.Client())
    finally:
        monkeypatch.setattr(transports, "create_ssl_context", real)


def test_a_growing_key_log_makes_no_new_context(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.log"
    monkeypatch.setenv("SSLKEYLOGFILE", str(keys))
    with virtual_provider("slow-success"):
        first = context_of(httpx.Client())
        keys.write_text("CLIENT_RANDOM 00 00\n")  # (what each handshake appends)
        assert context_of(httpx.Client()) is first


# -- a real host's certificate is still checked ---------------------------------------------


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no CA signed, and its key (PEM files)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def https_url(self_signed: tuple[Path, Path]) -> Iterator[str]:
    """An HTTPS server on 127.0.0.1 with the self-signed certificate, answering 200 "real"."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"real")

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # (the refused handshakes)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed)
    server = Server(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_a_default_client_made_in_a_fake_still_refuses_an_untrusted_certificate(
    https_url: str, self_signed: tuple[Path, Path]
) -> None:
    trusting = ssl.create_default_context(cafile=str(self_signed[0]))
    with virtual_provider("slow-success"):
        with httpx.Client() as client, pytest.raises(httpx.ConnectError) as refused:
            client.get(https_url)
        assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)
        with httpx.Client(verify=trusting) as client:
            assert client.get(https_url).text == "real"
