"""The price-tolerance rule of the cumulative match (docs/design.md §12), written once.

Step 6 applies it in SQL (recon/store/weighing.py renders `RULE` over its columns and
parameters) and `MatchPolicy.tolerates` evaluates the same text in Python, so the two cannot
drift apart: there is no second statement of it to keep in step. The formula names four things:
`price` (the invoice's unit price), `po_price`, and the two tolerances, `paise` per unit and
`percent` of the PO price, each 0 when it is not set. A tolerance set means a difference within
it is tolerated; with both set, only a difference within both.

The formula is Python syntax, read with `ast` (never `eval`), and may use only what both readers
know: `and`, `or`, `==`, `>`, `<=`, `-`, `*`, `abs()`, names and numbers.

Both readers compute exactly (issue 37: prices with a fraction of a paisa): SQL in `numeric`
(step 6 passes the percent as `float8::numeric`), Python in `Decimal`, every number read from its
shortest decimal text (`0.5` is one half, never the binary float nearest it).
"""

from __future__ import annotations

import ast
from decimal import Decimal

RULE = (
    "price == po_price"
    " or ((paise > 0 or percent > 0)"
    " and (paise == 0 or abs(price - po_price) <= paise)"
    " and (percent == 0 or abs(price - po_price) * 100.0 <= percent * po_price))"
)

_TREE = ast.parse(RULE, mode="eval").body
_SQL_OPS = {ast.And: "AND", ast.Or: "OR", ast.Eq: "=", ast.Gt: ">", ast.LtE: "<=",
            ast.Sub: "-", ast.Mult: "*"}


def as_sql(**names: str) -> str:
    """The rule as one SQL expression, every name replaced by the SQL it stands for."""
    return _sql(_TREE, names)


def holds(**values: int | float | Decimal) -> bool:
    """The rule for one pair of prices and one pair of tolerances."""
    return bool(_value(_TREE, {name: _exact(v) for name, v in values.items()}))


def _exact(number: int | float | Decimal) -> Decimal:
    return Decimal(repr(number)) if isinstance(number, float) else Decimal(number)


def _sql(node: ast.expr, names: dict[str, str]) -> str:
    match node:
        case ast.BoolOp(op=op, values=parts):
            return "(" + f" {_SQL_OPS[type(op)]} ".join(_sql(p, names) for p in parts) + ")"
        case ast.Compare(left=left, ops=[op], comparators=[right]):
            return f"{_sql(left, names)} {_SQL_OPS[type(op)]} {_sql(right, names)}"
        case ast.BinOp(left=left, op=op, right=right):
            return f"{_operand(left, names)} {_SQL_OPS[type(op)]} {_operand(right, names)}"
        case ast.Call(func=ast.Name(id="abs"), args=[arg]):
            return f"abs({_sql(arg, names)})"
        case ast.Name(id=name):
            return names[name]
        case ast.Constant(value=int() | float() as number):
            return repr(number)
    raise ValueError(f"the price rule may not use {ast.dump(node)}")


def _operand(node: ast.expr, names: dict[str, str]) -> str:
    """An arithmetic operand: in parentheses when it is itself an operation."""
    text = _sql(node, names)
    return f"({text})" if isinstance(node, ast.BinOp) else text


def _value(node: ast.expr, values: dict[str, Decimal]) -> Decimal | bool:
    match node:
        case ast.BoolOp(op=ast.And(), values=parts):
            return all(_value(p, values) for p in parts)
        case ast.BoolOp(op=ast.Or(), values=parts):
            return any(_value(p, values) for p in parts)
        case ast.Compare(left=left, ops=[op], comparators=[right]):
            a, b = _value(left, values), _value(right, values)
            return {ast.Eq: a == b, ast.Gt: a > b, ast.LtE: a <= b}[type(op)]
        case ast.BinOp(left=left, op=ast.Sub(), right=right):
            return _value(left, values) - _value(right, values)
        case ast.BinOp(left=left, op=ast.Mult(), right=right):
            return _value(left, values) * _value(right, values)
        case ast.Call(func=ast.Name(id="abs"), args=[arg]):
            return abs(_value(arg, values))
        case ast.Name(id=name):
            return values[name]
        case ast.Constant(value=int() | float() as number):
            return _exact(number)
    raise ValueError(f"the price rule may not use {ast.dump(node)}")
