"""account.move with recon's key: a unique Char, written once in the move's create."""

from trytond.model import Unique, fields
from trytond.pool import PoolMeta


class Move(metaclass=PoolMeta):
    __name__ = "account.move"

    # Not `readonly`: Tryton refuses a readonly field in a create over RPC, and recon writes it
    # in the move's own create. A posted move cannot be changed at all (the account module).
    recon_key = fields.Char(
        "recon Key",
        help="recon's reference of the adjustment this move posts (one move per key).")

    @classmethod
    def __setup__(cls) -> None:
        super().__setup__()
        t = cls.__table__()
        # NULLs are distinct for both SQLite and PostgreSQL: moves not made by recon are free.
        cls._sql_constraints += [
            ("recon_key_unique", Unique(t, t.recon_key), "recon_keys.msg_recon_key_unique"),
        ]

    @classmethod
    def copy(cls, moves, default=None):
        """A copy (a cancelling move, a duplicate made by hand) is another move: never the key."""
        default = {} if default is None else default.copy()
        default.setdefault("recon_key", None)
        return super().copy(moves, default=default)
