"""Recipe options: the value of each option a variant is built with.

An option (:class:`builder.recipe.model.Option`) has a type — bool, int, str or list — a
default and, optionally, the values it allows.  Its value is, the last one found
winning: the default; the deprecated ``legacy_env`` variable (with a note saying what
to use instead); the option's ``env`` variable; ``-o [recipe:]name=value`` on the
command line (:class:`OptionOverride`).  Text is converted to the option's type (bools:
``1/true/yes/on``, ``0/false/no/off``; lists: ``,`` or ``;`` separated) and checked
against the allowed values; a bad value is a :class:`UsageError` that says where it
came from.
"""

from __future__ import annotations

from builder.errors import UsageError
from builder.recipe.model import Option, OptionValue, Recipe, option_text
from builder.resolve.request import Request
from builder.util.secrets import reference

__all__ = ["parse_option_value", "resolve_options", "secret_name", "secret_options"]



def _bool(text: str) -> bool | None:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    return None


def parse_option_value(opt: Option, raw: str, origin: str) -> OptionValue:
    """Turn command-line/env text into the option's type, checking allowed values."""
    if any(c in raw for c in "\n\r\0"):  # it would reach Conan, CMake and logs
        raise UsageError(f"{origin}: the value of option '{opt.name}' contains a line break "
                         f"or NUL; give it on one line")
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]  # legacy knobs are often written with embedded quotes
    value: OptionValue
    if opt.type == "bool":
        b = _bool(text)
        if b is None:
            raise UsageError(f"{origin}: option '{opt.name}' is a bool; got '{raw}' "
                             f"(use true/false)")
        value = b
    elif opt.type == "int":
        try:
            value = int(text)
        except ValueError:
            raise UsageError(f"{origin}: option '{opt.name}' is an int; got '{raw}'") from None
    elif opt.type == "list":
        value = tuple(x.strip() for x in text.replace(";", ",").split(",") if x.strip())
    else:
        value = text
    if opt.allowed:
        items = value if isinstance(value, tuple) else (value,)
        bad = [i for i in items if i not in opt.allowed]
        if bad:
            raise UsageError(f"{origin}: {bad[0]!r} is not an allowed value of option "
                             f"'{opt.name}' (allowed: {', '.join(map(str, opt.allowed))})")
    return value


def resolve_options(recipe: Recipe, request: Request,
                    notes: list[str]) -> dict[str, OptionValue]:
    """Each option's value; a ``secret: true`` option that was given a value has its
    reference instead (:func:`secret_options` gives the values, to the CLI only)."""
    values = _given(recipe, request, notes)
    for o in recipe.options:
        if o.secret and values[o.name] != o.default:
            values[o.name] = reference(secret_name(recipe.name, o.name))
    return values


def secret_name(recipe: str, option: str) -> str:
    return f"{recipe}/options/{option}"


def secret_options(recipe: Recipe, request: Request) -> dict[str, str]:
    """{vault name: value} of the recipe's secret options that were given a value."""
    values = _given(recipe, request, [])
    return {secret_name(recipe.name, o.name): str(values[o.name]) for o in recipe.options
            if o.secret and values[o.name] != o.default}


def _given(recipe: Recipe, request: Request, notes: list[str]) -> dict[str, OptionValue]:
    env = dict(request.env)
    values: dict[str, OptionValue] = {o.name: o.default for o in recipe.options}
    for o in recipe.options:
        if o.legacy_env and env.get(o.legacy_env):
            values[o.name] = parse_option_value(o, env[o.legacy_env],
                                                f"environment {o.legacy_env}")
            notes.append(f"{recipe.name}: {o.legacy_env} is deprecated; use -o "
                         f"{recipe.name}:{o.name}={option_text(values[o.name])}")
        if o.env and env.get(o.env):
            values[o.name] = parse_option_value(o, env[o.env], f"environment {o.env}")
    for ov in request.options:
        if ov.recipe and ov.recipe != recipe.name:
            continue
        opt = recipe.option(ov.name)
        if opt is None:
            if ov.recipe:
                known = ", ".join(o.name for o in recipe.options) or "none"
                raise UsageError(f"-o {ov.recipe}:{ov.name}: recipe '{recipe.name}' has no "
                                 f"option '{ov.name}' (options: {known})")
            continue
        values[ov.name] = parse_option_value(opt, ov.value, f"-o {ov.name}")
    return values
