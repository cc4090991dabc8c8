"""Every workflow the worker serves."""

from workflows.nightly import NightlyReconciliation
from workflows.schedules import NightlyStarter
from workflows.undo import UndoReconciliation

WORKFLOWS = [NightlyReconciliation, UndoReconciliation, NightlyStarter]
