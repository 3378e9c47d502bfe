"""The compiled core (formats/_scan.pyx and _framing_walk.pyx, Cython), built with the machine's C
compiler where there is one. Everything else is in pyproject.toml. Without a compiler, or without
Cython, the install goes on and kafkalog runs on their pure-Python twins (formats/_scan_py.py and
_framing_walk_py.py; formats/byte_loops.py picks, and `kafkalog --version` says which core runs)."""
from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext whose failure leaves the pure-Python core, with a warning, instead of failing
    the install."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # no compiler at all (DistutilsPlatformError), ...
            self._skipped(e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # the compiler failed (CompileError, LinkError, ...)
            self._skipped(e)

    def _skipped(self, e):
        self.warn(f"kafkalog: the compiled core was not built ({type(e).__name__}: {e}); "
                  "kafkalog runs on its pure-Python core")


def _extensions():
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("kafkalog: Cython is not installed: the compiled core is not built; kafkalog runs on its "
              "pure-Python core")
        return []
    from setuptools import Extension

    return cythonize(
        [Extension(f"kafkalog_cli.formats.{name}", [f"src/kafkalog_cli/formats/{name}.pyx"])
         for name in ("_scan", "_framing_walk")],
        compiler_directives={"language_level": 3}, quiet=True)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
