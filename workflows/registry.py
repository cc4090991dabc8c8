"""Every workflow the worker serves."""

from workflows.nightly import NightlyReconciliation
from workflows.nightly_starter import NightlyStarter
from workflows.undo import UndoReconciliation

WORKFLOWS = [NightlyReconciliation, UndoReconciliation, NightlyStarter]
