"""recon_keys: recon's key on a Tryton move, unique by Tryton's own constraint.

recon (github: the recon project, docs/ledger.md) posts each adjustment of a night as one
`account.move` and must post it exactly once, whatever crashes or races. Without this module it
looks the key up first and posts only the lowest-id move of a key, which assumes ids follow the
order creates commit; on PostgreSQL they need not. With it, the move's `recon_key` is written in
the move's own create, and the database refuses a second move with the same key: exactly once
whatever the ids and whoever races.

Install: put this directory where trytond finds modules (its `modules` directory, or a package
registering it under the `trytond.modules` entry point, as recon does), then
`trytond-admin -c trytond.conf -d DB -u recon_keys --activate-dependencies`.
"""

from trytond.pool import Pool

from . import move

__all__ = ["register"]


def register() -> None:
    Pool.register(move.Move, module="recon_keys", type_="model")
