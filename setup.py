"""The optional compiled helpers: every ``tokplay_native/<name>.c`` becomes the extension
module ``tokplay_native.<name>`` (see tokplay_native/__init__.py). ``optional=True``: on a
machine without a C compiler the build warns and goes on, and core uses its pure-Python
twins, with the same results (the metadata lives in pyproject.toml)."""

from pathlib import Path

from setuptools import Extension, setup

_HERE = Path(__file__).resolve().parent

setup(
    ext_modules=[
        Extension(
            f"tokplay_native.{source.stem}",
            [source.relative_to(_HERE).as_posix()],
            optional=True,
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wno-unused-function"],
            depends=["tokplay_native/hash.h"],  # (shared by the helpers: rebuild them all)
        )
        for source in sorted((_HERE / "tokplay_native").glob("*.c"))
    ]
)
