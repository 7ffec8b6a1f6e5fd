"""What an operation is: one declaration from which its Python method, HTTP route, client method, MCP tool and
CLI subcommand are generated (the declarations themselves are in :mod:`palimpsest.operations`).

An :class:`Operation` names its parameters (:class:`Param`: type, default, bounds, help), whether it reads,
writes or administers, its handler (the :class:`palimpsest.Memory` method of its name, or a shard reader:
:class:`ShardReader`) and its exposures: always Python (the ``Memory`` method, which the route and the
subcommand call), and each other when declared: ``http`` (:class:`Http`; also the ``RemoteMemory`` method),
``mcp`` (the tool's description; the tool sends the HTTP request), ``cli`` (:class:`Cli`). The pydantic
request model that validates the parameters is built from the declaration (:func:`request_model`,
:func:`validate`): every refusal names the field and how to fix it.

Standard library only, and pydantic imported only by :func:`request_model`: the CLI's client path reads the
declarations and must stay light (``tests/unit/test_cli_client.py``).
"""

from __future__ import annotations

import inspect
import re
import types
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Union, get_args, get_origin
from urllib.parse import quote

from events.errors import InvalidInputError

READ, WRITE, ADMIN = "read", "write", "admin"
PYTHON, HTTP, MCP, CLI = "python", "http", "mcp", "cli"
REQUIRED = inspect.Parameter.empty
STORE = "store"  # Operation.user of an operation over the whole store
USER_PREFIX = "/v1/users/{user_id}"
TENANT_PREFIX = "/v1"
_SCALARS = (str, int, bool, datetime, dict)  # dict: a JSON object (a POST's body only); list[str] also allowed
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def base_type(annotation: Any) -> tuple[type, bool]:
    """``(scalar type, may be None)`` of a parameter's annotation: ``int`` gives (int, False), ``str | None``
    (str, True), ``list[str]`` (a list of texts, a POST's body only) (list, False)."""
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        return list, False
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1 and args[0] in _SCALARS:
            return args[0], True
    elif annotation in _SCALARS:
        return annotation, False
    raise TypeError(f"{annotation!r}: a parameter is str, int, bool, datetime or dict (a JSON object), or one of "
                    "them | None, or list[str]")


@dataclass(frozen=True)
class Param:
    """One parameter: its name, type (``str``, ``int``, ``bool``, ``datetime``, or ``dict``: a JSON object, which only
    a POST takes; each ``| None`` allowed), default (none: required), help, bounds (an integer's value, a text's or a
    list's length), the texts it may be (``choices``), and how the surfaces spell it. A ``{name}`` in the operation's HTTP path makes it a path segment; otherwise a GET takes it as a query
    parameter, a POST in its JSON body."""

    name: str
    type: Any
    default: Any = REQUIRED
    help: str = ""
    ge: int | None = None
    le: int | None = None
    positional: bool = False  # Python: may be given by position (after tenant and user_id)
    flag: str | None = None  # CLI: its spelling (default --name-with-dashes); without a leading dash, positional
    choices: tuple[str, ...] | None = None  # a text: one of these (an enum in the MCP schema, choices on the CLI)
    python: str | None = None  # the name the Python method takes it by, when not ``name`` (HTTP, MCP, CLI: name)

    @property
    def arg(self) -> str:
        """Its name in the Python method's signature."""
        return self.python or self.name

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def expects(self) -> str:
        """How to give a valid value, for the fix of a refusal."""
        kind, nullable = base_type(self.type)
        if kind is int:
            if self.ge is not None and self.le is not None:
                text = f"give an integer from {self.ge} to {self.le}"
            elif self.ge is not None:
                text = f"give an integer, at least {self.ge}"
            else:
                text = "give an integer"
        elif kind is bool:
            text = "give true or false"
        elif kind is datetime:
            text = "give an ISO-8601 time with its offset, e.g. 2024-05-01T09:00:00+00:00"
        elif kind is dict:
            text = 'give a JSON object, e.g. {"food": "tea"}'
        elif kind is list:
            text = 'give a list of texts, e.g. ["id-1", "id-2"]' + (
                f" ({self.ge} to {self.le} of them)" if self.ge is not None and self.le is not None else "")
        elif self.choices:
            text = "give one of " + ", ".join(self.choices)
        elif self.ge or self.le is not None:
            text = ("give a non-empty text" if self.le is None else f"give a text of at most {self.le} characters"
                    if not self.ge else f"give a text of {self.ge} to {self.le} characters")
        else:
            text = "give a text"
        return text + (", or leave it out" if nullable or not self.required else "")

    def json_schema(self) -> dict[str, Any]:
        """The parameter as a JSON schema property (the MCP tool's input schema)."""
        kind, _ = base_type(self.type)
        schema: dict[str, Any] = {"type": {str: "string", int: "integer", bool: "boolean",
                                           datetime: "string", dict: "object", list: "array"}[kind]}
        if kind is list:
            schema["items"] = {"type": "string"}
        if self.choices:
            schema["enum"] = list(self.choices)
        bounds = {list: ("minItems", "maxItems"), str: ("minLength", "maxLength")}.get(kind, ("minimum", "maximum"))
        if self.ge is not None:
            schema[bounds[0]] = self.ge
        if self.le is not None:
            schema[bounds[1]] = self.le
        if not self.required and self.default is not None:
            schema["default"] = self.default
        help_ = self.help + (" ISO-8601 with its offset, e.g. 2024-05-01T09:00:00+00:00."
                             if kind is datetime else "")
        if help_:
            schema["description"] = help_.strip()
        return schema


@dataclass(frozen=True)
class Http:
    """The operation's route: ``path`` under ``/v1/users/{user_id}`` (``{name}`` marks a path parameter)."""

    method: str
    path: str
    summary: str  # the OpenAPI summary: what it answers, in the user's words
    answer: str | None = None  # the key the result is answered under ({"notes": [...]}); None: the result itself
    tenant_summary: str | None = None  # an operation whose user is optional also answers at /v1{path}, tenant-wide
    name: str | None = None  # the route's name in its OpenAPI operationId, when not the operation's
    # RemoteMemory: a ``module:function`` rebuilding the Python result from the answer's JSON (hits, a context);
    # None: the JSON is the result. (The route answers a result with ``to_dict`` as that: a list of them, each.)
    decode: str | None = None

    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"\{(\w+)\}", self.path))


@dataclass(frozen=True)
class Cli:
    """The operation's subcommand: ``command`` is its words (``"notes list"``); ``render`` a ``module:function``
    printing the result as text (called with the result and the parsed arguments); without one, JSON."""

    command: str
    help: str
    render: str | None = None  # called with (result, args), and ``mem=`` the store or client if it takes it
    # Switches only the renderer reads (e.g. ``("-v", "--verbose", "also the ids")``): store_true options.
    switches: tuple[tuple[str, ...], ...] = ()
    # A list cut by a parameter: (that parameter, the ``user_stats`` count of the whole list); the text then ends
    # with "… and N more (use -k)" when the list was cut.
    counted: tuple[str, str] | None = None


@dataclass(frozen=True)
class ShardReader:
    """The handler is a shard reader: the function registered as ``@reader(<operation name>)`` in ``module``
    (:mod:`actors.declared`), called with the validated parameters as keywords. ``encodes`` names a text parameter
    the driver encodes with the store's encoder: the reader also gets ``query_vector``, ``query_model`` (the
    vector's model) and ``fusion`` (the store's default), as a search does."""

    module: str
    encodes: str | None = None


@dataclass(frozen=True)
class Operation:
    """One operation, declared once; its exposures are generated from this (see the module docstring)."""

    name: str
    kind: str  # READ, WRITE or ADMIN (an admin operation needs an admin key over HTTP)
    params: tuple[Param, ...] = ()
    doc: str = ""  # the generated Python method's docstring
    # "optional": tenant-wide without a user (tenant and user_id then keywords); "store": the whole store, no tenant
    # and no user (an admin operation: its route is /v1{path} alone)
    user: str = "required"
    # Over HTTP, whether the call may name a user the tenant does not have yet (None: a write may, a read may not;
    # False: 404 for an unknown user, as for a read).
    new_user: bool | None = None
    # Over HTTP, an admin key may name another tenant's user (``?tenant=``); a tenant key acts on its own tenant.
    other_tenant: bool = False
    handler: ShardReader | None = None  # None: the palimpsest.Memory method of this name
    http: Http | None = None
    mcp: str | None = None  # the MCP tool's description; the tool sends the HTTP request
    cli: Cli | None = None

    @property
    def starts_user(self) -> bool:
        """Whether an HTTP call may name a user its tenant does not have yet."""
        return self.kind == WRITE if self.new_user is None else self.new_user

    def wire(self, values: dict[str, Any]) -> dict[str, Any]:
        """Python arguments (by :attr:`Param.arg`) under their HTTP names."""
        return {p.name: values[p.arg] for p in self.params if p.arg in values}

    def python(self, values: dict[str, Any]) -> dict[str, Any]:
        """HTTP values under the Python method's argument names."""
        return {self.param(name).arg if name in {p.name for p in self.params} else name: value
                for name, value in values.items()}

    @property
    def exposure(self) -> frozenset[str]:
        return frozenset(name for name, on in ((PYTHON, True), (HTTP, self.http), (MCP, self.mcp), (CLI, self.cli))
                         if on)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def routes(self) -> list[tuple[str, str, bool]]:
        """``(full path, summary, tenant-wide)`` of each route: the user's, and the tenant's if it has one."""
        if self.http is None:
            return []
        if self.user == STORE:
            return [(TENANT_PREFIX + self.http.path, self.http.summary, True)]
        out = [(USER_PREFIX + self.http.path, self.http.summary, False)]
        if self.http.tenant_summary:
            out.append((TENANT_PREFIX + self.http.path, self.http.tenant_summary, True))
        return out


def _kind(p: Param) -> type | None:
    try:
        return base_type(p.type)[0]
    except TypeError:
        return None  # reported by check


def check(op: Operation) -> Operation:
    """``op`` if its declaration is coherent; otherwise a ``ValueError`` naming what to fix."""
    problems = []
    if not _NAME.fullmatch(op.name):
        problems.append(f"name {op.name!r}: lowercase words joined by _")
    if op.kind not in (READ, WRITE, ADMIN):
        problems.append(f"kind {op.kind!r}: one of read, write, admin")
    if op.user not in ("required", "optional", STORE):
        problems.append(f"user {op.user!r}: required, optional or store")
    if op.user == STORE and op.kind != ADMIN:
        problems.append("user 'store': an operation over the whole store (every tenant) is an admin operation")
    names = [p.name for p in op.params]
    args = [p.arg for p in op.params]
    if len(set(names)) != len(names) or len(set(args)) != len(args) or {"tenant", "user_id", "self"} & {*names, *args}:
        problems.append(f"params {names}: distinct, and none named tenant, user_id or self")
    if op.handler is not None and names != args:
        problems.append("params: a shard reader takes each parameter by its name; give none a python name")
    for p in op.params:
        try:
            base_type(p.type)
        except TypeError as exc:
            problems.append(f"param {p.name}: {exc}")
    if op.http is not None:
        missing = set(op.http.path_params()) - set(names)
        if missing:
            problems.append(f"http path {op.http.path}: no param named {', '.join(sorted(missing))}")
        if op.http.method not in ("GET", "POST"):
            problems.append(f"http method {op.http.method!r}: GET or POST")
        if op.http.tenant_summary and op.user != "optional":
            problems.append("http tenant_summary: only an operation whose user is optional answers tenant-wide")
    if op.mcp and op.http is None:
        problems.append("mcp: a tool sends the operation's HTTP request; declare http too")
    if op.other_tenant and op.user != "required":
        problems.append("other_tenant: only an operation of one user may name another tenant's")
    if op.handler is not None and op.user != "required":
        problems.append("handler: a shard reader answers one user; user must be required")
    kinds = {p.name: _kind(p) for p in op.params}
    if op.handler is not None and op.handler.encodes is not None and kinds.get(op.handler.encodes) is not str:
        problems.append(f"handler encodes {op.handler.encodes!r}: name a text (str) parameter")
    for p in op.params:
        if p.choices and (kinds[p.name] is not str or (not p.required and p.default not in (None, *p.choices))):
            problems.append(f"param {p.name} choices: only a text has choices, and its default is one of them")
    objects = [name for name, kind in kinds.items() if kind in (dict, list)]
    if objects and op.http is not None and op.http.method == "GET":
        problems.append(f"params {objects}: a JSON object or list travels in a POST's body; declare http POST")
    if problems:
        raise ValueError(f"operation {op.name!r} is not declared right: " + "; ".join(problems))
    return op


def registry(*ops: Operation) -> dict[str, Operation]:
    """The operations by name, each checked; two with one name, or one route twice, are refused."""
    out: dict[str, Operation] = {}
    routes: dict[tuple[str, str], str] = {}
    for op in map(check, ops):
        if op.name in out:
            raise ValueError(f"operation {op.name!r} is declared twice; give the second another name")
        for path, _, _ in op.routes():
            key = (op.http.method, path)
            if key in routes:
                raise ValueError(f"{op.name} and {routes[key]} both answer {key[0]} {path}; change one path")
            routes[key] = op.name
        out[op.name] = op
    return out


# -- Python ------------------------------------------------------------------
def signature(op: Operation) -> inspect.Signature:
    """The Python method's signature: ``self, tenant, user_id``, the positional params, then keywords (an operation
    whose user is optional takes ``tenant`` and ``user_id`` as keywords, as the tenant-wide calls of ``Memory`` do;
    one over the whole store takes neither)."""
    P = inspect.Parameter
    head = [P("self", P.POSITIONAL_OR_KEYWORD)]
    if op.user == "required":
        head += [P("tenant", P.POSITIONAL_OR_KEYWORD, annotation=str), P("user_id", P.POSITIONAL_OR_KEYWORD,
                                                                          annotation=str)]
    positional = [P(p.arg, P.POSITIONAL_OR_KEYWORD, default=p.default, annotation=p.type)
                  for p in op.params if p.positional]
    keywords = [P(p.arg, P.KEYWORD_ONLY, default=p.default, annotation=p.type) for p in op.params if not p.positional]
    if op.user == "optional":
        keywords = [P("tenant", P.KEYWORD_ONLY, default=None, annotation=str | None),
                    P("user_id", P.KEYWORD_ONLY, default=None, annotation=str | None)] + keywords
    return inspect.Signature(head + positional + keywords)


def bind(sig: inspect.Signature, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments of a call (``self`` first in ``args``) by name, defaults filled in, ``self`` left out."""
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    values = dict(bound.arguments)
    values.pop("self")
    return values


def as_method(op: Operation, sig: inspect.Signature, run) -> Any:
    """``run(self, values)`` as the operation's method: its name, signature and docstring."""

    def call(self, *args, **kwargs):
        return run(self, bind(sig, (self, *args), kwargs))

    call.__name__ = call.__qualname__ = op.name
    call.__signature__ = sig
    call.__doc__ = op.doc or (op.http.summary if op.http else None)
    return call


# -- validation (pydantic, built on first use) -------------------------------
_MODELS: dict[tuple[str, bool, bool], type] = {}


def request_model(op: Operation, body: bool = False, scoped: bool = False) -> type:
    """The frozen pydantic model of the operation's parameters (unknown ones refused; times need an offset);
    ``body``: of those a POST takes in its body (all but the path's); ``scoped``: and an optional ``user_id`` (a
    tenant-wide POST narrowed to one user)."""
    model = _MODELS.get((op.name, body, scoped))
    if model is None:
        from pydantic import AwareDatetime, ConfigDict, Field, create_model

        fields = {}
        for p in op.params:
            if body and p.name in op.http.path_params():
                continue
            kind, nullable = base_type(p.type)
            annotation = {datetime: AwareDatetime, dict: dict[str, Any], list: list[str]}.get(kind, kind)
            if p.choices:
                annotation = Literal[p.choices]
            bounds = {"min_length": p.ge, "max_length": p.le} if kind in (list, str) else {"ge": p.ge, "le": p.le}
            default = ... if p.required else list(p.default) if isinstance(p.default, tuple) else p.default
            fields[p.name] = (annotation | None if nullable else annotation,
                              Field(default, **bounds, description=p.help or None))
        if scoped:
            fields["user_id"] = (str | None, Field(None, min_length=1, description="only this user of your tenant"))
        title = "".join(w.capitalize() for w in op.name.split("_")) + ("Body" if body else "Request") + (
            "Scoped" if scoped else "")
        model = _MODELS[op.name, body, scoped] = create_model(title, __config__=ConfigDict(frozen=True, extra="forbid"),
                                                      **fields)
    return model


def validate(op: Operation, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` checked by the request model (defaults filled in); an :class:`InvalidInputError` naming each field
    and its fix otherwise."""
    from pydantic import ValidationError

    try:
        return request_model(op).model_validate(values).model_dump()
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]) or "request"
            if err["type"] == "extra_forbidden":
                known = ", ".join(p.name for p in op.params) or "none"
                problems.append((name, f"no such parameter of {op.name}; its parameters: {known}"))
                continue
            given = "nothing" if err["type"] == "missing" else repr(err.get("input"))[:60]
            fix = op.param(name).expects() if name in {p.name for p in op.params} else "see the operation's parameters"
            problems.append((name, f"{err['msg']} (got {given}); {fix}"))
        raise InvalidInputError(problems, what=op.name) from None


# -- HTTP requests (RemoteMemory and the MCP tools send them) ------------------
def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def http_request(op: Operation, values: dict[str, Any], user_path: str | None) -> tuple[str, str, dict | None,
                                                                                          dict | None]:
    """``(method, path, JSON body, query parameters)`` of a call with ``values``: under ``user_path``
    (``/v1/users/<id>``), or tenant-wide without one. A value left out or None is not sent (the route's default)."""
    path_names = op.http.path_params()
    missing = [n for n in path_names if values.get(n) in (None, "")]
    if missing:
        raise InvalidInputError([(n, f"missing; {op.param(n).expects()}") for n in missing], what=op.name)
    path = op.http.path.format(**{n: quote(str(values[n]), safe="") for n in path_names})
    rest = {k: v for k, v in values.items() if k not in path_names and v is not None}
    full = (user_path if user_path is not None else TENANT_PREFIX) + path
    if op.http.method == "GET":
        return "GET", full, None, {k: _query_value(v) for k, v in rest.items()}
    return op.http.method, full, {k: v.isoformat() if isinstance(v, datetime) else v for k, v in rest.items()}, None


def answer_of(op: Operation, body: Any) -> Any:
    """The operation's result from its HTTP answer (rebuilt by the declared ``decode``, if any)."""
    value = body[op.http.answer] if op.http.answer else body
    return load(op.http.decode)(value) if op.http.decode else value


def load(where: str):
    """The function a ``module:function`` names (a renderer, a decoder)."""
    import importlib

    module, _, function = where.partition(":")
    return getattr(importlib.import_module(module), function)
