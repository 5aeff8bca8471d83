"""Chat templates run as untrusted code: transformers' sandbox, plus limits on time and size.

A model's chat template is Jinja source from a file anyone can publish. It is rendered the
way ``transformers`` renders it (``transformers/utils/chat_template_utils.py``,
``_cached_compile_jinja_template``): an ``ImmutableSandboxedEnvironment`` with
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, a ``{% generation %}``
block that renders its body, the ``tojson`` filter with its options (``ensure_ascii=False``
by default, ``indent``, ``separators``, ``sort_keys``), and the globals ``raise_exception``,
``strftime_now``, ``dict`` and a ``namespace`` that refuses ``_`` names. Nothing else is
added, so a template renders here exactly as there.

Then three things transformers does not do, because this runs on a shared server:

- **escapes refused before anything runs**: a template that names an attribute or key
  starting with ``_`` (``cycler.__init__.__globals__``, ``''.__class__.__mro__``,
  ``x['__subclasses__']``) is refused at compile time, with the line, and never rendered;
  the sandbox itself still stands behind that check.
- **time and depth**: a trace on the template's own frames stops it after
  :attr:`Limits.seconds` (an endless or huge loop) or :attr:`Limits.depth` nested calls (a
  macro that calls itself).
- **size**: output past :attr:`Limits.chars` stops the render, and every operation that
  could build a huge value in one step (``*``, ``+``, ``~``, ``**``, ``%``, ``str.format``,
  width arguments such as ``center(10**9)``, ``replace``) is checked before it runs.

>>> render_template("{{ messages[0]['content'] | upper }}", {"messages": [{"content": "hi"}]})
'HI'
>>> render_template("{{ cycler.__init__.__globals__ }}", {})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
core.chat.sandbox.TemplateSecurityError: the chat template reaches for Python internals ...
"""

from __future__ import annotations

import functools
import json
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.errors import PlaygroundError

__all__ = [
    "ChatTemplateError",
    "Limits",
    "MissingJinjaError",
    "TemplateLimitError",
    "TemplateSecurityError",
    "check_template",
    "render_template",
]


class ChatTemplateError(PlaygroundError):
    """A chat template cannot render this conversation (its syntax, its own
    ``raise_exception``, a value it needs and the conversation lacks)."""


class TemplateSecurityError(ChatTemplateError):
    """A chat template that tries to leave the sandbox: refused, nothing run."""


class TemplateLimitError(ChatTemplateError):
    """A chat template stopped by a limit: time, depth of calls, or size."""


class MissingJinjaError(PlaygroundError):
    """``jinja2`` is not installed: chat templates cannot be rendered."""


@dataclass(frozen=True)
class Limits:
    """How far one render may go. ``seconds``: wall time of the template's own code;
    ``depth``: nested template calls (macros); ``chars``: the rendered text, and any one
    string or list the template builds; ``source_chars``: the template's own text.

    >>> Limits().chars
    1000000
    """

    seconds: float = 2.0
    depth: int = 64
    chars: int = 1_000_000
    source_chars: int = 200_000


DEFAULT_LIMITS = Limits()
_TEMPLATE_FILE = "<template>"  # the file name Jinja gives code compiled from a string
_BIG_NUMBER = re.compile(r"\d{7,}")  # a width or precision of a million or more
_DUNDER = re.compile(r"__\w+__\Z")
_NESTED_SPEC = re.compile(r"\{[^{}]*:[^{}]*\{")
_MAX_POWER_BITS = 4096


# ─── the environment ─────────────────────────────────────────────────────────────────────


def _jinja() -> Any:
    try:
        import jinja2
        import jinja2.ext
        import jinja2.nodes
        import jinja2.sandbox
    except ImportError as err:
        raise MissingJinjaError(
            "rendering chat templates needs the jinja2 package: pip install jinja2"
        ) from err
    return jinja2


def _too_big(what: str, size: int, limits: Limits) -> TemplateLimitError:
    return TemplateLimitError(
        f"the chat template stopped: it builds {what} of {size:,} items, over the limit of "
        f"{limits.chars:,}"
    )


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, dict)) else 0


def _check_binop(op: str, left: Any, right: Any, limits: Limits) -> None:
    """Refuse ``*``, ``+``, ``**`` and ``%`` whose result would be too large, before they run."""
    if op == "*":
        for seq, count in ((left, right), (right, left)):
            if _size(seq) and isinstance(count, int) and _size(seq) * count > limits.chars:
                raise _too_big("a repeated value", _size(seq) * count, limits)
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > limits.chars:
                raise _too_big("a number", left.bit_length() + right.bit_length(), limits)
    elif op == "+" and _size(left) + _size(right) > limits.chars:
        raise _too_big("a joined value", _size(left) + _size(right), limits)
    elif op == "**" and isinstance(left, int) and isinstance(right, int):
        if abs(left) > 1 and right * max(left.bit_length(), 1) > _MAX_POWER_BITS:
            raise TemplateLimitError(
                f"the chat template stopped: {left} ** {right} is too large a number"
            )
    elif op == "%" and isinstance(left, str):
        values = right if isinstance(right, tuple) else (right,)
        if _BIG_NUMBER.search(left) or any(
            isinstance(v, int) and v > limits.chars for v in values
        ):
            raise TemplateLimitError("the chat template stopped: a format width over a million")


def _check_call(obj: Any, args: tuple, kwargs: dict, limits: Limits) -> None:
    """Refuse a string method that would build a huge string from a small one."""
    owner = getattr(obj, "__self__", None)
    if not isinstance(owner, str):
        return
    name = getattr(obj, "__name__", "")
    numbers = [a for a in (*args, *kwargs.values()) if isinstance(a, int)]
    if name in {"center", "ljust", "rjust", "zfill"} and any(n > limits.chars for n in numbers):
        raise _too_big(f"a string by {name}()", max(numbers), limits)
    if name == "expandtabs" and numbers and owner.count("\t") * numbers[0] > limits.chars:
        raise _too_big("a string by expandtabs()", owner.count("\t") * numbers[0], limits)
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        hits = owner.count(args[0]) if args[0] else len(owner) + 1
        size = len(owner) + hits * max(len(args[1]) - len(args[0]), 0)
        if size > limits.chars:
            raise _too_big("a string by replace()", size, limits)
    nested = _NESTED_SPEC.search(owner) is not None  # '{:{}}': the width is an argument
    texts = [a for a in (*args, *kwargs.values()) if isinstance(a, str)]
    if name in {"format", "format_map"} and (
        _BIG_NUMBER.search(owner) or any(n > limits.chars for n in numbers)
        or (nested and any(_BIG_NUMBER.search(t) for t in texts))
    ):
        raise TemplateLimitError("the chat template stopped: a format width over a million")


def _guard_filter(func: Callable[..., Any], limits: Limits) -> Callable[..., Any]:
    """A filter that refuses width arguments over the limit and results over it."""

    @functools.wraps(func)  # keeps jinja's pass_context / pass_environment marks
    def guarded(*args: Any, **kwargs: Any) -> Any:
        values = [*args, *kwargs.values()]
        for value in values:
            if isinstance(value, int) and not isinstance(value, bool) and value > limits.chars:
                raise _too_big("a value by a filter", value, limits)
            if isinstance(value, str) and func.__name__ == "do_format" and _BIG_NUMBER.search(value):
                raise TemplateLimitError("the chat template stopped: a format width over a million")
        texts = [v for v in args if isinstance(v, str)]
        if func.__name__ == "do_replace" and len(texts) >= 3:
            _check_call(texts[0].replace, (texts[1], texts[2]), {}, limits)
        result = func(*args, **kwargs)
        if _size(result) > limits.chars:
            raise _too_big("a value by a filter", _size(result), limits)
        return result

    return guarded


@functools.lru_cache(maxsize=4)
def _environment(limits: Limits) -> Any:
    """The sandbox: transformers' environment, with the size checks of ``limits``."""
    jinja2: Any = _jinja()  # (annotated: so its classes can be bases below)

    class GenerationBlock(jinja2.ext.Extension):
        # transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(
                self.call_method("_body"), [], [], body
            ).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return caller()

    class Sandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "+", "**", "%"})

        def wrap_str_format(self, value: Any) -> Any:
            # str.format reaches the template through this wrapper, not through call()
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None

            def checked(*args: Any, **kwargs: Any) -> str:
                _check_call(value, args, kwargs, limits)
                return wrapped(*args, **kwargs)

            return checked

        @staticmethod
        def concat(parts: Any) -> str:
            parts = list(parts)
            if sum(map(len, parts)) > limits.chars:
                raise _too_big("a captured block", sum(map(len, parts)), limits)
            return "".join(parts)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right, limits)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            _check_call(__obj, args, kwargs, limits)
            result = super().call(__context, __obj, *args, **kwargs)
            if _size(result) > limits.chars:
                raise _too_big("a value", _size(result), limits)
            return result

    def raise_exception(message: Any) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format: str) -> str:  # transformers' name for the argument
        return datetime.now().strftime(format)

    class TemplateDict:
        # no dict type in reach: only calling it and fromkeys, as in transformers
        def __call__(self, *args: Any, **kwargs: Any) -> dict:
            return dict(*args, **kwargs)

        def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args: Any, **kwargs: Any) -> None:  # no `self`: Jinja's own trick
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name: str, value: Any) -> None:
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name: Any) -> None:
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"Chat templates cannot store underscore-prefixed attributes on a "
                    f"namespace, but got {name!r}. Please rename the attribute."
                )

    env = Sandbox(trim_blocks=True, lstrip_blocks=True,
                  extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.filters = {name: _guard_filter(f, limits) for name, f in env.filters.items()}
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


# ─── compiling: the escape check ─────────────────────────────────────────────────────────


def check_template(source: str, *, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise :class:`TemplateSecurityError` when ``source`` names an ``_`` attribute or key
    (the way out of every Jinja sandbox escape), :class:`ChatTemplateError` on a syntax error.

    >>> check_template("{{ messages | length }}")
    >>> check_template("{{ x['__class__'] }}")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.chat.sandbox.TemplateSecurityError: the chat template reaches for Python internals ...
    """
    _compile(source, limits)


def _checked(tree: Any, env: Any, jinja2: Any) -> Any:
    """The template compiled from ``tree``, once no name in it reaches for internals."""
    nodes = jinja2.nodes
    name: object
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Const)):
        if isinstance(node, nodes.Const):  # attr('__class__'), map(attribute='__init__')
            name = node.value if isinstance(node.value, str) and _DUNDER.match(node.value) else ""
        elif isinstance(node, nodes.Getattr):
            name = node.attr
        else:
            name = getattr(node.arg, "value", None)
        if isinstance(name, str) and name.startswith("_"):
            raise TemplateSecurityError(
                f"the chat template reaches for Python internals ({name!r} at line "
                f"{node.lineno}): names that start with _ are refused, and nothing was run"
            )
    return env.from_string(tree)


@functools.lru_cache(maxsize=64)
def _compile(source: str, limits: Limits) -> Any:
    if not isinstance(source, str):
        raise ChatTemplateError(f"a chat template is text, not {type(source).__name__}")
    if len(source) > limits.source_chars:
        raise TemplateLimitError(
            f"the chat template is {len(source):,} characters long, over the limit of "
            f"{limits.source_chars:,}"
        )
    jinja2 = _jinja()
    env = _environment(limits)
    try:
        tree = env.parse(source)
        template = _checked(tree, env, jinja2)
    except jinja2.TemplateSyntaxError as err:  # also an unknown filter or test
        raise ChatTemplateError(
            f"the chat template has a syntax error at line {err.lineno}: {err.message}"
        ) from None
    # `~` joins through the template module's own str_join; captured blocks ({% set %},
    # macros) through environment.concat, which the Sandbox class checks
    module = template.root_render_func.__globals__
    plain_join = module["str_join"]

    def str_join(seq: Any) -> str:
        parts = [str(p) for p in seq]
        if sum(map(len, parts)) > limits.chars:
            raise _too_big("a joined string", sum(map(len, parts)), limits)
        return plain_join(parts)

    module["str_join"] = str_join
    return template


# ─── rendering: the time and depth guard ─────────────────────────────────────────────────


class _Guard:
    """A trace on the template's frames only: the clock every 256 lines, the depth of
    nested calls (each macro call is a frame of the template file)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.seconds
        self.depth = 0
        self.lines = 0

    def on_call(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != _TEMPLATE_FILE:
            return None  # jinja's runtime and Python's own code run untraced, at full speed
        self.depth += 1
        if self.depth > self.limits.depth:
            raise TemplateLimitError(
                f"the chat template stopped: calls nested more than {self.limits.depth} deep "
                "(a macro that calls itself without end?)"
            )
        return self.on_line

    def on_line(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines += 1
            if not self.lines & 255 and time.monotonic() > self.deadline:
                raise TemplateLimitError(
                    f"the chat template stopped: still running after {self.limits.seconds:g} s "
                    "(an endless or very long loop?)"
                )
        elif event == "return":
            self.depth -= 1
        return self.on_line


def render_template(
    source: str, variables: Mapping[str, Any], *, limits: Limits = DEFAULT_LIMITS
) -> str:
    """``source`` rendered with ``variables`` in the sandbox, within ``limits``.

    Every failure is a :class:`ChatTemplateError` with a one-line message:
    :class:`TemplateSecurityError` for an escape, :class:`TemplateLimitError` for a limit.

    >>> render_template("{% for i in range(3) %}{{ i }}{% endfor %}", {})
    '012'
    >>> render_template("{{ raise_exception('roles must alternate') }}", {})
    Traceback (most recent call last):
    ...
    core.chat.sandbox.ChatTemplateError: the chat template refused this conversation: roles must alternate
    """
    template = _compile(source, limits)
    jinja2 = _jinja()
    out: list[str] = []
    size = 0
    try:
        # the whole render runs under the trace: generate() steps the template lazily
        guard = _Guard(limits)
        before = sys.gettrace()
        sys.settrace(guard.on_call)
        try:
            for chunk in template.generate(**variables):
                size += len(chunk)
                if size > limits.chars:
                    raise TemplateLimitError(
                        f"the chat template stopped: its output passed the limit of "
                        f"{limits.chars:,} characters"
                    )
                out.append(chunk)
        finally:
            sys.settrace(before)
    except ChatTemplateError:
        raise
    except jinja2.exceptions.SecurityError as err:
        raise TemplateSecurityError(
            f"the chat template tried something the sandbox forbids ({err}); it was stopped"
        ) from None
    except jinja2.exceptions.UndefinedError as err:
        raise ChatTemplateError(f"the chat template needs a value it was not given: {err}") from None
    except jinja2.exceptions.TemplateError as err:
        raise ChatTemplateError(f"the chat template refused this conversation: {err}") from None
    except RecursionError:
        raise TemplateLimitError("the chat template stopped: it recursed too deep") from None
    except MemoryError:
        raise TemplateLimitError("the chat template stopped: it ran out of memory") from None
    except Exception as err:  # noqa: BLE001 - a template's own bug (TypeError, ...): one line
        raise ChatTemplateError(
            f"the chat template failed: {type(err).__name__}: {err}"
        ) from None
    return "".join(out)
