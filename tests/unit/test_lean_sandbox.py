"""The worker's sandbox (recon/runtime/sandbox.py) is the SDK's, minus repeated compiling: each
run still gets its own fresh copy of the workflow modules, restricted calls still fail, and a
payload's serialization context is the one the SDK's own sandbox gives."""

from __future__ import annotations

import sys

import pytest
import temporalio.converter
import temporalio.workflow
from temporalio.api.common.v1.message_pb2 import Payloads
from temporalio.api.failure.v1.message_pb2 import Failure
from temporalio.worker._workflow_instance import WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import RestrictedWorkflowAccessError, SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import _runner as sandbox_runner

from recon.runtime.sandbox import (
    LeanSandboxedWorkflowRunner,
    compile_workflow_modules_once,
    workflow_runner,
)
from workflows.nightly import NightlyReconciliation


def _details() -> WorkflowInstanceDetails:
    default = temporalio.converter.DataConverter.default
    return WorkflowInstanceDetails(
        payload_converter_factory=default._new_payload_converter,
        failure_converter_class=default.failure_converter_class, interceptor_classes=[],
        defn=temporalio.workflow._Definition.must_from_class(NightlyReconciliation),
        info=sandbox_runner._fake_info, randomness_seed=-1, extern_functions={},
        disable_eager_activity_execution=False, worker_level_failure_exception_types=[],
        patch_activation_callback=None, last_completion_result=Payloads(), last_failure=Failure())


async def test_each_run_gets_fresh_workflow_modules_and_the_sdks_context() -> None:
    assert isinstance(workflow_runner(), LeanSandboxedWorkflowRunner)
    compile_workflow_modules_once()
    compile_workflow_modules_once()  # idempotent
    stock, lean = SandboxedWorkflowRunner(), LeanSandboxedWorkflowRunner()
    first, second, theirs = (lean.create_instance(_details()), lean.create_instance(_details()),
                             stock.create_instance(_details()))
    for instance in (first, second, theirs):
        assert instance.get_serialization_context(None) is not None
    assert first.get_serialization_context(None) == theirs.get_serialization_context(None)
    assert (first.get_external_store_context(None)
            == theirs.get_external_store_context(None))
    # a sandbox of its own per run: the workflow module is imported anew, not shared
    ours = first.importer.new_modules["workflows.nightly"]
    assert ours is not second.importer.new_modules["workflows.nightly"]
    assert ours is not sys.modules["workflows.nightly"]


async def test_a_restricted_call_still_fails_in_the_lean_sandbox() -> None:
    instance = LeanSandboxedWorkflowRunner().create_instance(_details())
    instance.importer.restriction_context.is_runtime = True  # as during an activation
    try:
        with pytest.raises(RestrictedWorkflowAccessError):
            instance._run_code("with __temporal_importer.applied():\n"
                               "  import datetime\n  datetime.datetime.now()\n",
                               __temporal_importer=instance.importer)
    finally:
        instance.importer.restriction_context.is_runtime = False
