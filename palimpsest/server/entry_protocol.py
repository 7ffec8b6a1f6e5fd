"""The HTTP protocol of a direct replica's server: uvicorn's, with a refusal answered from the request's headers.

Past capacity most requests a replica reads are refused (a flooding tenant's
hundreds a second). Through the app each refusal costs a task, the ASGI
middlewares, a response object and two writes (the head, then the body):
about 250 µs of the replica's CPU here, taken from the requests it does
answer. :class:`EntryProtocol` asks the entry admission
(:func:`palimpsest.server.admission_http.refused_at_entry`) once a request's
headers are parsed; a request refused there is answered at once, head and
body in one write, and its body (if any is still coming) is read and dropped
by the parser as for any answer sent early. Any other request goes on to the
app exactly as before. The answer is the one the app gives (503, the API's
error body, ``Retry-After``).

:func:`install` makes it the protocol of the uvicorn servers this process starts
afterwards (Ray Serve starts a direct replica's without naming one).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from palimpsest.server.admission_http import refused_at_entry

PATH = "palimpsest.server.entry_protocol:EntryProtocol"


class EntryProtocol(HttpToolsProtocol):
    def _start_asgi_task(self, cycle, app) -> None:
        refused = refused_at_entry(cycle.scope)
        if refused is None:
            super()._start_asgi_task(cycle, app)
            return
        headers = [*self.server_state.default_headers, *refused.raw_headers]
        if not cycle.keep_alive:
            headers.append((b"connection", b"close"))
        cycle.response_started = cycle.response_complete = True  # the parser drops the rest of its body
        cycle.message_event.set()
        self.transport.write(b"".join([STATUS_LINE[refused.status_code], *(b"%s: %s\r\n" % h for h in headers),
                                       b"\r\n", refused.body]))
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()


def install() -> bool:
    """Make :class:`EntryProtocol` the HTTP protocol of uvicorn servers started in this process with the default
    (``auto``); whether it could (False: this uvicorn resolves its protocols elsewhere)."""
    from uvicorn import config

    protocols = getattr(config, "HTTP_PROTOCOLS", None)
    if not isinstance(protocols, dict) or "auto" not in protocols:
        return False
    protocols["auto"] = PATH
    return True
