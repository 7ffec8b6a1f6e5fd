"""The subcommands of the declared operations (:mod:`palimpsest.operations`), generated from their declarations.

Each runs the operation's method on the store, or through ``--server`` on a :class:`palimpsest.client.RemoteMemory`
(same method, same result; :func:`palimpsest.cli.cmd_operation` opens either), and prints the result as JSON
(``--json``, one document, added here to every operation's subcommand) or with the declaration's renderer. A
command of two words (``notes list``) joins the group of its first word, made here if no hand-written command made
it.
"""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Callable
from datetime import datetime

from palimpsest.cli_common import parse_when, print_json, read_options, stream_args
from palimpsest.cli_style import more
from palimpsest.operation import STORE, Operation, Param, base_type, load
from palimpsest.operations import OPERATIONS


def _group(sub, word: str):
    """The subcommands of the group ``word`` (a hand-written one, or a new one)."""
    parser = sub.choices.get(word) or sub.add_parser(word, help=f"{word}: see its subcommands")
    for action in parser._actions:  # argparse keeps no public handle on a parser's subcommands
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=f"{word}_command", required=True)


def json_object(text: str) -> dict:
    """A JSON object given on the command line (a dict parameter), or argparse's error saying what to give."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}); give an object such as '{{\"food\": \"tea\"}}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"a JSON {type(value).__name__}; give an object such as "
                                         "'{\"food\": \"tea\"}'")
    return value


class Append(argparse.Action):
    """A repeated option's texts as a list (argparse's own ``append`` cannot start from a tuple default)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or ()), values])


def _argument(sp: argparse.ArgumentParser, p: Param) -> None:
    """``p`` as an option (``--name`` or its declared flag) or, declared with a flag without a dash, positional."""
    kind, _ = base_type(p.type)
    flag = p.flag or "--" + p.name.replace("_", "-")
    options: dict = {"help": p.help or None}
    if kind is bool:
        options["action"] = argparse.BooleanOptionalAction if p.default is True else "store_true"
    elif kind is list:  # positional: the words that are left; an option: repeated, once per text
        if flag.startswith("-"):
            options["action"] = Append
        else:
            options["nargs"] = "+"
        options["metavar"] = flag.lstrip("-").replace("-", "_").upper().removesuffix("S")
    elif p.choices:
        options["choices"] = p.choices
    else:
        options["type"] = {int: int, str: str, datetime: parse_when, dict: json_object}[kind]
        options["metavar"] = flag.lstrip("-").replace("-", "_").upper()
    if not flag.startswith("-"):
        optional = {} if p.required else {"nargs": "*" if kind is list else "?", "default": p.default}
        sp.add_argument(p.name, **{**options, **optional})
    else:
        sp.add_argument(flag, dest=p.name, **options,
                        **({"required": True} if p.required else {"default": p.default}))


def call(op: Operation, mem, args: argparse.Namespace):
    """The operation's method on ``mem`` (a Memory, or a RemoteMemory with ``--server``) with the parsed arguments."""
    scope = {} if op.user == STORE else {"tenant": args.tenant, "user_id": args.user}
    return getattr(mem, op.name)(**scope, **{p.arg: getattr(args, p.name) for p in op.params})


def show(op: Operation, result, args: argparse.Namespace, mem=None) -> None:
    """The result as JSON (``--json``, or no text rendering declared), else by the declared renderer; a list cut
    by its declared parameter (``Cli.counted``) ends with how many more there are (counted on ``mem``)."""
    if args.json or op.cli.render is None:
        print_json(result)
        return
    render = load(op.cli.render)
    if "mem" in inspect.signature(render).parameters:
        render(result, args, mem=mem)
    else:
        render(result, args)
    if op.cli.counted and mem is not None and isinstance(result, list):
        param, count = op.cli.counted
        if len(result) == getattr(args, param):
            total = mem.user_stats(tenant=args.tenant, user_id=args.user)[count]
            flag = next(p.flag or "--" + p.name.replace("_", "-") for p in op.params if p.name == param)
            if (line := more(total - len(result), flag)) is not None:
                print(line)


def register(sub, run: Callable[[Operation, argparse.Namespace], int]) -> None:
    """A subcommand for each declared operation exposed to the CLI; ``run(op, args)`` runs it (``palimpsest.cli``
    opens the store and calls :func:`call` and :func:`show`)."""
    for op in OPERATIONS.values():
        if op.cli is None:
            continue
        *group, word = op.cli.command.split()
        target = _group(sub, group[0]) if group else sub
        sp = target.add_parser(word, help=op.cli.help)
        if op.user != STORE:
            stream_args(sp, required=op.user == "required")
        for p in op.params:
            _argument(sp, p)
        for *flags, help_ in op.cli.switches:
            sp.add_argument(*flags, action="store_true", help=help_)
        read_options(sp)
        sp.set_defaults(func=lambda args, op=op: run(op, args))
