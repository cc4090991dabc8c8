"""Every workflow the worker serves."""

from workflows.nightly import NightlyReconciliation
from workflows.undo import UndoReconciliation

WORKFLOWS = [NightlyReconciliation, UndoReconciliation]
