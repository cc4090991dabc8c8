"""The workflow sandbox, minus the work it redoes for nothing on every run and every payload.

The SDK's sandbox keeps workflow code deterministic and isolated (a run re-imports its workflow
module into a sandbox of its own, and a restricted call fails the workflow task). It also pays,
per night, costs that buy none of that (a worker's CPU of twenty nights, bench/warehouses.py):

  - every call into the sandbox (each activation, and four or so per payload the codec seals or
    opens) hands `exec` a source string, which Python compiles again each time: ~15 µs, a third
    of such a call. Here each string is compiled once per process; the sandbox runs the same code.
  - the serialization context of a payload (which activity or workflow it belongs to) is read
    from the run's state through that same `exec`, with the sandbox's import hooks and
    restricted builtins put in place and taken down again (~40 µs, hundreds of times a night).
    The SDK's function reads a few fields of the run and imports nothing: here it is called
    directly (under 1 µs), with the same answer.
  - a machine that writes no bytecode (`PYTHONDONTWRITEBYTECODE`, as recon's CI and benches run)
    compiles the workflow modules from source again for every run the sandbox starts (~6 ms a
    run, half of starting one). `compile_workflow_modules_once` keeps their compiled code in
    memory, keyed by the source's own bytes: the same source always gives the same code, and a
    changed file is compiled anew.

Nothing here changes what runs inside the sandbox, what it restricts, or what a history replays
to (tests/histories: the replay test uses the SDK's stock sandbox and must agree).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import CodeType
from typing import Any

from temporalio.worker import WorkflowRunner
from temporalio.worker._workflow_instance import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import _runner as sandbox_runner

# The packages whose modules a run's sandbox imports anew (the rest pass through: imported once).
WORKFLOW_PACKAGES = ("workflows",)

_compiled: dict[str, CodeType] = {}


def _compiled_once(source: str) -> CodeType:
    code = _compiled.get(source)
    if code is None:
        code = _compiled[source] = compile(source, "<string>", "exec")
    return code


class _Instance(sandbox_runner._Instance):
    """The SDK's sandboxed run, with its code strings compiled once and the serialization
    context read directly."""

    def _run_code(self, code: Any, **extra_globals: Any) -> None:
        super()._run_code(_compiled_once(code) if isinstance(code, str) else code,
                          **extra_globals)

    def _in_sandbox(self) -> Any:
        return self.globals_and_locals["__temporal_in_sandbox"]

    def get_serialization_context(self, command_info: Any) -> Any:
        return self._in_sandbox().get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> Any:
        return self._in_sandbox().get_external_store_context(command_info)


class LeanSandboxedWorkflowRunner(SandboxedWorkflowRunner):
    """`SandboxedWorkflowRunner` with the same restrictions, serving `_Instance`s."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _Instance(det, self.runner_class, self.restrictions)


def _sdk_has_what_this_overrides() -> bool:
    """The overridden names are the SDK's private ones: on an SDK without them, fall back."""
    instance = getattr(sandbox_runner, "_Instance", None)
    return instance is not None and all(
        callable(getattr(instance, name, None))
        for name in ("_run_code", "get_serialization_context", "get_external_store_context"))


def workflow_runner() -> WorkflowRunner:
    """The runner the worker serves its workflows with."""
    if not _sdk_has_what_this_overrides():
        return SandboxedWorkflowRunner()
    return LeanSandboxedWorkflowRunner()


class _CodeOnceLoader(importlib.machinery.SourceFileLoader):
    _codes: dict[tuple[str, bytes], CodeType] = {}

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> CodeType:  # type: ignore[override]
        key = (str(path), hashlib.blake2b(bytes(data), digest_size=16).digest())
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = super().source_to_code(data, path, _optimize=_optimize)
        return code


class _CodeOnceFinder(importlib.abc.MetaPathFinder):
    def __init__(self, packages: Sequence[str]) -> None:
        self.packages = tuple(packages)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.partition(".")[0] not in self.packages:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _CodeOnceLoader(spec.loader.name, spec.loader.path)
        return spec


def compile_workflow_modules_once(packages: Sequence[str] = WORKFLOW_PACKAGES) -> None:
    """Where no bytecode is written, keep the workflow modules' compiled code for the sandbox's
    every re-import. Idempotent; nothing to do where bytecode files are written and read."""
    if not sys.dont_write_bytecode:
        return
    if any(isinstance(f, _CodeOnceFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _CodeOnceFinder(packages))
