"""The checks of things of the wrong kind, type, rank or place that the lifting used to meet first
and call forms it does not translate (the diagnostics probe of 2026-12): each is a rule of the
language, checked in a module of its own; this module runs them for sema/checks.py."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .constindex import constant_position_errors
from .devicework import device_work_errors
from .entryshapes import entry_shape_errors
from .fragrules import fragment_shape_errors
from .integers import float_integer_errors
from .returnviews import returned_view_errors
from .scopes import Resolution
from .wrongkinds import wrong_kind_errors


def mistake_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    out += constant_position_errors(fn, res)
    out += float_integer_errors(fn, res)
    out += wrong_kind_errors(fn, res)
    out += device_work_errors(fn)
    out += fragment_shape_errors(fn, res)
    out += entry_shape_errors(fn, res)
    out += returned_view_errors(fn, res)
    return out
