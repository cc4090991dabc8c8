"""Every workflow the worker serves."""

from workflows.nightly import NightlyReconciliation

WORKFLOWS = [NightlyReconciliation]
