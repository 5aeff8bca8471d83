"""core.chat.sandbox: hostile chat templates get a one-line message and run nothing.

"Nothing ran" is checked two ways: an escape is refused before rendering (the template's
first statement, which would raise its own message, never runs), and a template that
would write a file leaves no file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.chat.sandbox import (
    ChatTemplateError,
    Limits,
    MissingJinjaError,
    TemplateLimitError,
    TemplateSecurityError,
    render_template,
)

RAN = "{{ raise_exception('the template ran') }}"  # first: proves rendering never started

ESCAPES = {
    "cycler-globals": "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "joiner-globals": "{{ joiner.__init__.__globals__['os'].system('true') }}",
    "subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "getitem": "{{ ()['__class__']['__base__'] }}",
    "attr-filter": "{{ (1 | attr('__class__')) }}",
    "map-attribute": "{{ [1] | map(attribute='__class__') | list }}",
    "namespace-dunder": "{{ namespace.__init__ }}",
    "dict-global": "{{ dict.__call__.__globals__ }}",
    "lipsum": "{{ lipsum.__globals__['os'] }}",
    "private": "{{ messages._private }}",
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escape_refused_before_anything_runs(name: str) -> None:
    with pytest.raises(TemplateSecurityError, match="reaches for Python internals.*nothing was run"):
        render_template(RAN + ESCAPES[name], {"messages": []})


def test_escape_by_built_name_blocked_by_the_sandbox(tmp_path: Path) -> None:
    """A name built at run time passes the static check; the sandbox itself still stops it."""
    target = tmp_path / "pwned"
    source = ("{% set n = '_' ~ '_class' ~ '__' %}{{ '' | attr(n) }}"
              f"{{{{ cycler | attr('_' ~ '_init__') | attr('_' ~ '_globals__') }}}}"
              f"{{{{ joiner | attr('_' ~ '_init__') }}}}{{{{ '{target}' }}}}")
    assert render_template(source, {}) == str(target)  # undefined: empty, nothing reached
    assert not target.exists()


def test_namespace_refuses_underscore_names() -> None:
    with pytest.raises(TemplateSecurityError, match="underscore-prefixed"):
        render_template("{% set ns = namespace() %}{% set ns._x = 1 %}", {})


def test_immutable_values() -> None:
    with pytest.raises(TemplateSecurityError, match="sandbox forbids"):
        render_template("{% set x = [1] %}{{ x.append(2) }}", {})


FAST = Limits(seconds=0.2, depth=32, chars=10_000)

LIMITED = {
    "endless-loop": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                     "{% endfor %}", "still running after 0.2 s"),
    "recursion": ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                  "nested more than 32 deep"),
    "mutual-recursion": ("{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}"
                         "{% endmacro %}{{ a() }}", "nested more than 32 deep"),
    "huge-output": ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
                    "output passed the limit of 10,000"),
    "repeat": ("{{ 'a' * 10**12 }}", "repeated value"),
    "list-repeat": ("{{ ([1] * 10**9) | length }}", "repeated value"),
    "doubling": ("{% set ns = namespace(x='ab') %}{% for i in range(64) %}"
                 "{% set ns.x = ns.x ~ ns.x %}{% endfor %}", "joined string"),
    "plus": ("{% set ns = namespace(x='ab') %}{% for i in range(64) %}"
             "{% set ns.x = ns.x + ns.x %}{% endfor %}", "joined value"),
    "captured": ("{% set ns = namespace(x='ab') %}{% for i in range(64) %}{% set y %}"
                 "{{ ns.x }}{{ ns.x }}{% endset %}{% set ns.x = y %}{% endfor %}",
                 "captured block"),
    "power": ("{{ 7 ** (10 ** 9) }}", "too large a number"),
    "center": ("{{ 'a'.center(10**12) }}", "center"),
    "replace": ("{{ ('a' * 5000) | replace('a', 'a' * 5000) }}", "replace"),
    "format": ("{{ '{:>99999999999}'.format('a') }}", "format width"),
    "nested-format": ("{{ '{:{}}'.format('a', 10**11) }}", "format width"),
    "percent": ("{{ '%99999999999s' % 'a' }}", "format width"),
    "format-filter": ("{{ '%99999999999s' | format('a') }}", "format width"),
    "indent": ("{{ 'a\nb' | indent(10**11) }}", "by a filter"),
    "source": ("x" * 300_000, "300,000 characters long"),
}


@pytest.mark.parametrize("name", list(LIMITED))
def test_limits(name: str) -> None:
    source, message = LIMITED[name]
    limits = Limits(seconds=0.2, depth=32, chars=10_000) if name != "source" else Limits()
    with pytest.raises(TemplateLimitError, match=message):
        render_template(source, {}, limits=limits)


def test_within_limits_renders() -> None:
    source = "{% for i in range(2000) %}{{ i % 10 }}{% endfor %}{{ '{:>5}'.format('a') }}"
    assert render_template(source, {}, limits=FAST) == "0123456789" * 200 + "    a"


@pytest.mark.parametrize("source, message", [
    ("{% for %}", "syntax error at line 1"),
    ("{{ raise_exception('roles must alternate') }}", "refused this conversation: roles must"),
    ("{{ messages[0]['content'] }}", "needs a value it was not given"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ("{{ unknown_filter_x | nosuchfilter }}", "syntax error at line 1: No filter named"),
])
def test_template_errors_are_one_line(source: str, message: str) -> None:
    with pytest.raises(ChatTemplateError, match=message) as info:
        render_template(source, {"messages": []})
    assert "\n" not in str(info.value)


def test_transformers_globals_and_filters() -> None:
    """What transformers adds, and how it behaves (tojson's options, dict, namespace,
    loop controls, the generation block, trim_blocks/lstrip_blocks)."""
    source = (
        "{{ {'b': 'é', 'a': [1]} | tojson }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|"
        "{{ [1, 2] | tojson(indent=2) }}|{{ {'a': 1} | tojson(separators=(',', ':')) }}|"
        "{{ dict(x=1).x }}{{ dict.fromkeys(['k'], 0).k }}|"
        "{% set ns = namespace(n=0) %}{% for i in range(9) %}{% if i == 3 %}{% continue %}"
        "{% endif %}{% if i == 5 %}{% break %}{% endif %}{% set ns.n = ns.n + i %}{% endfor %}"
        "{{ ns.n }}|{% generation %}gen{% endgeneration %}|{{ strftime_now('%Y') | length }}\n"
        "  {% if true %}\nx\n  {% endif %}\n"
    )
    assert render_template(source, {}) == (
        '{"b": "é", "a": [1]}|{"a": 2, "b": 1}|[\n  1,\n  2\n]|{"a":1}|10|7|gen|4\nx\n'
    )


def test_missing_jinja(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import sys

    from core.chat import sandbox as chat_sandbox

    real_import = builtins.__import__

    def no_jinja(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("jinja2"):
            raise ImportError("No module named 'jinja2'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jinja)
    for name in [m for m in sys.modules if m.startswith("jinja2")]:
        monkeypatch.delitem(sys.modules, name)
    chat_sandbox._environment.cache_clear()
    chat_sandbox._compile.cache_clear()
    with pytest.raises(MissingJinjaError, match="needs the jinja2 package: pip install jinja2"):
        render_template("{{ 1 }}", {})
    chat_sandbox._environment.cache_clear()
