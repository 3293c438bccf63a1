"""The one registry of renderers and :func:`emit`, the one place a CLI command's answer is written in the format
asked for (issue 21 item 6); the :class:`~kvplan.views.formats.Format` enum lives in :mod:`kvplan.views.formats`.

A command builds an *answer* (one of the small frozen types below: :class:`FitAnswer`, :class:`Listing`,
:class:`SweepAnswer` ...), resolves ``--format`` with :func:`resolve` and hands both to :func:`emit`; it never
looks at the format itself.  Each answer type declares its formats in one place, this module:

* ``@REGISTRY.renders(T, Format.X)`` over a function ``(answer, echo) -> None`` that writes ``answer`` as X
  (``echo`` is how the CLI writes text: click's echo, no newline added);
* ``REGISTRY.refuse(T, Format.X, message, hint)``: X is accepted by ``--format`` but this answer has no X form;
  :func:`emit` (and :func:`check_renderable`, for a refusal due before any work) raise it as
  :class:`~kvplan.errors.InputError` (exit 2), ``message`` formatted with the answer's words.

What ``--format`` accepts for an answer (its metavar, its help, the hint of an unknown format) is read from the
registry: the formats that have a renderer or a refusal, in the order they were declared.  Adding a format is one
:class:`Format` member and one renderer per answer type that has it.  Renderers import their view modules inside
the function, so ``kvplan fit --format json`` loads kvplan.views.serialize and nothing of rich.

Every command accepts its own subset and default, unchanged from before the views were gathered here:

======================================  ============================  =======================
command                                 ``--format``                  default off a terminal
======================================  ============================  =======================
fit, models, gpus, show, calibrate,     table | json | csv            json
speed
sweep                                   table | csv | jsonl           jsonl
solve                                   table | json | csv (csv:      json
                                        solve config only)
check, calibrate-speed                  table | json                  json
speed --chart / --plot                  table | json (csv refused)    table
======================================  ============================  =======================

On a terminal the default is always ``table``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

from kvplan.errors import InputError
from kvplan.views.formats import TABLE_JSON_CSV, Format, resolve_format

# --------------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------------

#: how the CLI writes text (click's echo with ``nl=False``): ``echo(text)``
Echo = Callable[[str], Any]
#: a renderer: writes one answer in one format
Renderer = Callable[[Any, Echo], None]


class Refusal:
    """A format ``--format`` accepts that one answer has no form in: ``message`` (a ``str.format`` template over
    the words the caller gives, e.g. ``{question}``) and ``hint``, raised as InputError on ``--format``."""

    __slots__ = ("hint", "message")

    def __init__(self, message: str, hint: str) -> None:
        self.message = message
        self.hint = hint

    def error(self, words: dict[str, Any]) -> InputError:
        return InputError(self.message.format(**words), field="--format", hint=self.hint)


class Registry:
    """Answer type -> (format -> renderer or refusal), and each answer type's default off a terminal."""

    def __init__(self) -> None:
        self._forms: dict[type, dict[StrEnum, Renderer | Refusal]] = {}
        self._defaults: dict[type, StrEnum] = {}

    def answer(self, default: StrEnum) -> Callable[[type], type]:
        """Class decorator: declare an answer type and its format off a terminal (``table`` on one)."""

        def declare(cls: type) -> type:
            self._forms.setdefault(cls, {})
            self._defaults[cls] = default
            return cls

        return declare

    def renders(self, answer: type, fmt: StrEnum) -> Callable[[Renderer], Renderer]:
        """Decorator: the renderer of ``answer`` in ``fmt`` (one per answer type and format)."""

        def declare(func: Renderer) -> Renderer:
            self._add(answer, fmt, func)
            return func

        return declare

    def refuse(self, answer: type, fmt: StrEnum, message: str, hint: str) -> None:
        """``fmt`` is accepted for ``answer`` and refused with one line (exit 2)."""
        self._add(answer, fmt, Refusal(message, hint))

    def _add(self, answer: type, fmt: StrEnum, form: Renderer | Refusal) -> None:
        forms = self._forms.setdefault(answer, {})
        if fmt in forms:
            raise ValueError(f"{answer.__name__} already has a {fmt} form")
        forms[fmt] = form

    def answers(self) -> tuple[type, ...]:
        return tuple(self._forms)

    def formats(self, answer: type) -> tuple[StrEnum, ...]:
        """What ``--format`` accepts for ``answer`` (rendered or refused), in declaration order."""
        return tuple(self._forms[answer])

    def default(self, answer: type) -> StrEnum:
        return self._defaults[answer]

    def form(self, answer: type, fmt: StrEnum) -> Renderer | Refusal | None:
        return self._forms.get(answer, {}).get(fmt)

    def copy(self) -> Registry:
        """A scratch registry holding the same declarations (tests add to it without touching :data:`REGISTRY`)."""
        new = Registry()
        new._forms = {k: dict(v) for k, v in self._forms.items()}
        new._defaults = dict(self._defaults)
        return new


#: the registry every command's output goes through
REGISTRY = Registry()


def resolve(answer: type, requested: str | None, *, registry: Registry | None = None) -> Any:
    """:func:`resolve_format` over what ``answer`` accepts and its default off a terminal."""
    reg = registry or REGISTRY
    return resolve_format(requested, allowed=reg.formats(answer), default_when_not_tty=reg.default(answer))


def format_help(answer: type, note: str = "", *, registry: Registry | None = None) -> str:
    """The help of a command's ``--format``: ``table | json | csv (default: table on a terminal, JSON otherwise).``
    (``note`` goes before ``default``, e.g. ``csv: config only; ``)."""
    reg = registry or REGISTRY
    default = reg.default(answer)
    label = "JSON" if default == Format.JSON else str(default)
    return f"{' | '.join(reg.formats(answer))} ({note}default: table on a terminal, {label} otherwise)."


def check_renderable(answer: type, fmt: StrEnum, *, registry: Registry | None = None, **words: Any) -> None:
    """Raise the refusal of ``fmt`` for ``answer`` now (before any work or output), when it is one."""
    form = (registry or REGISTRY).form(answer, fmt)
    if isinstance(form, Refusal):
        raise form.error(words)


def _stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def emit(
    answer: Any, fmt: StrEnum, *, echo: Echo | None = None, registry: Registry | None = None, **words: Any
) -> None:
    """Write ``answer`` in ``fmt`` through the renderer the registry holds for its type; ``echo`` is how text is
    written (the CLI passes click's echo; default: stdout).  A refused format raises its InputError (exit 2,
    ``words`` fill its message); a format the type never declared is a kvplan bug (ValueError, exit 1)."""
    form = (registry or REGISTRY).form(type(answer), fmt)
    if form is None:
        raise ValueError(f"{type(answer).__name__} has no {fmt} renderer")
    if isinstance(form, Refusal):
        raise form.error(words)
    form(answer, echo or _stdout)


# --------------------------------------------------------------------------------------------------
# the answers and their renderers (one per answer type and format)
# --------------------------------------------------------------------------------------------------


def _terminal() -> Any:
    from kvplan.views.console import terminal_console

    return terminal_console()


@REGISTRY.answer(default=Format.JSON)
class FitAnswer:
    """``kvplan fit``: one result per engine; ``speeds`` (one per engine) with ``--speed``."""

    __slots__ = ("explain", "results", "speeds")

    def __init__(self, results: Sequence[Any], speeds: Sequence[Any] | None = None, explain: bool = False) -> None:
        self.results = results
        self.speeds = speeds
        self.explain = explain


@REGISTRY.renders(FitAnswer, Format.TABLE)
def _fit_table(a: FitAnswer, echo: Echo) -> None:
    if a.speeds is not None:
        from kvplan.views.speed import print_fit_speed

        print_fit_speed(a.results, a.speeds, explain=a.explain)
        return
    from kvplan.views import render

    render.print_fit(a.results, explain=a.explain)


def _fit_text(a: FitAnswer, echo: Echo, fmt: Format) -> None:
    if a.speeds is not None:
        from kvplan.views.speed import fit_speed_text

        echo(fit_speed_text(a.results, a.speeds, fmt))
        return
    from kvplan.views.serialize import fit_text

    echo(fit_text(a.results, fmt))


REGISTRY.renders(FitAnswer, Format.JSON)(lambda a, echo: _fit_text(a, echo, Format.JSON))
REGISTRY.renders(FitAnswer, Format.CSV)(lambda a, echo: _fit_text(a, echo, Format.CSV))


@REGISTRY.answer(default=Format.JSON)
class WhatIfAnswer:
    """``kvplan fit --from-log``: the log's baseline and the what-if side by side (kvplan.views.whatif)."""

    __slots__ = ("whatif",)

    def __init__(self, whatif: Any) -> None:
        self.whatif = whatif


def _whatif(fmt: Format) -> Renderer:
    def write(a: WhatIfAnswer, echo: Echo) -> None:
        from kvplan.views.whatif import render_whatif

        echo(render_whatif(a.whatif, fmt.value))

    return write


for _f in TABLE_JSON_CSV:
    REGISTRY.renders(WhatIfAnswer, _f)(_whatif(_f))


@REGISTRY.answer(default=Format.JSON)
class Listing:
    """``kvplan models`` / ``gpus`` / ``show``: flat rows (and ``info`` lines above them: show)."""

    __slots__ = ("full_listing", "hide", "info", "priority", "rows", "title")

    def __init__(
        self,
        rows: list[dict[str, Any]],
        title: str,
        info: dict[str, Any] | None = None,
        hide: tuple[str, ...] = (),
        priority: tuple[str, ...] = (),
        full_listing: str = "",
    ) -> None:
        self.rows = rows
        self.title = title
        self.info = info
        self.hide = hide
        self.priority = priority
        self.full_listing = full_listing


@REGISTRY.renders(Listing, Format.TABLE)
def _listing_table(a: Listing, echo: Echo) -> None:
    from kvplan.views.listing import info_text, print_rows

    if a.info:
        echo(info_text(a.info))
    print_rows(a.rows, title=a.title, hide=a.hide, priority=a.priority, full_listing=a.full_listing)


def _listing_text(fmt: Format) -> Renderer:
    def write(a: Listing, echo: Echo) -> None:
        from kvplan.views.listing import rows_text

        echo(rows_text(a.rows, fmt, info=a.info))

    return write


REGISTRY.renders(Listing, Format.JSON)(_listing_text(Format.JSON))
REGISTRY.renders(Listing, Format.CSV)(_listing_text(Format.CSV))


@REGISTRY.answer(default=Format.JSON)
class SpeedAnswer:
    """``kvplan speed``: one speed result."""

    __slots__ = ("explain", "result")

    def __init__(self, result: Any, explain: bool = False) -> None:
        self.result = result
        self.explain = explain


@REGISTRY.renders(SpeedAnswer, Format.TABLE)
def _speed_table(a: SpeedAnswer, echo: Echo) -> None:
    from kvplan.views.speed import print_speed

    print_speed(a.result, explain=a.explain)


def _speed_text(fmt: Format) -> Renderer:
    def write(a: SpeedAnswer, echo: Echo) -> None:
        from kvplan.views.speed import speed_text

        echo(speed_text(a.result, fmt))

    return write


REGISTRY.renders(SpeedAnswer, Format.JSON)(_speed_text(Format.JSON))
REGISTRY.renders(SpeedAnswer, Format.CSV)(_speed_text(Format.CSV))


@REGISTRY.answer(default=Format.TABLE)  # no --format: the chart, also on a pipe
class TtftChartAnswer:
    """``kvplan speed --chart / --plot``: the TTFT series and the terminal chart's text (None without --chart)."""

    __slots__ = ("chart", "series")

    def __init__(self, series: Any, chart: str | None = None) -> None:
        self.series = series
        self.chart = chart


@REGISTRY.renders(TtftChartAnswer, Format.TABLE)
def _ttft_table(a: TtftChartAnswer, echo: Echo) -> None:
    if a.chart is not None:
        sys.stdout.write(a.chart + "\n")
    sys.stdout.flush()


@REGISTRY.renders(TtftChartAnswer, Format.JSON)
def _ttft_json(a: TtftChartAnswer, echo: Echo) -> None:
    from kvplan.views.ttft_chart import to_json

    sys.stdout.write(to_json(a.series))
    if a.chart is not None:  # the chart beside the JSON: on stderr
        sys.stderr.write(a.chart + "\n")
    sys.stdout.flush()


REGISTRY.refuse(TtftChartAnswer, Format.CSV, "the TTFT chart has no CSV form", "use table or json")


@REGISTRY.answer(default=Format.JSONL)
class SweepAnswer:
    """``kvplan sweep``: the table of points, how to order and cut it, the speed columns (``--speed``), the file
    (``--output``) and the chart text written after the rows (``aside``: the capacity frontier or the Pareto
    chart; on stderr when CSV / JSON lines hold stdout)."""

    __slots__ = ("aside", "cols", "concurrencies", "output", "sort", "speed_order", "table", "top")

    def __init__(
        self,
        table: Any,
        sort: str | None = None,
        top: int = 20,
        cols: Any = None,
        concurrencies: tuple[int, ...] = (1,),
        speed_order: Any = None,
        output: str | None = None,
        aside: str | None = None,
    ) -> None:
        self.table = table
        self.sort = sort
        self.top = top
        self.cols = cols
        self.concurrencies = concurrencies
        self.speed_order = speed_order
        self.output = output
        self.aside = aside

    def order(self, default: str | None) -> Any:
        """The row indices best first: the speed order, else the table's own by ``sort`` (``default`` when not
        given); without a ``default`` the grid order (None) unless a sort other than ``none`` is given."""
        if self.speed_order is not None:
            return self.speed_order
        if default is not None:
            return self.table.order(self.sort or default)
        return self.table.order(self.sort) if self.sort not in (None, "none") else None

    def write(self, write: Callable[[Any], Any]) -> None:
        """Write chunk by chunk (``SweepTable.write_csv`` / ``write_jsonl``) to ``output`` or stdout: memory grows
        with the chunk, not with the grid."""
        if self.output:  # a temporary file renamed over --output when complete; OutputError (exit 1) when it cannot
            from kvplan.inputs.read import atomic_output

            with atomic_output(self.output, field="--output") as fh:
                write(fh)
        else:
            write(sys.stdout)
            sys.stdout.flush()

    def csv_writer(self, idx: Any) -> Callable[[Any], Any]:
        """The CSV writer: the capacity columns, and the speed columns with ``--speed``."""
        if self.cols is None:
            return lambda fh: self.table.write_csv(fh, idx)
        from kvplan.planning.sweep.speed import write_csv_with_speed

        concs = list(self.concurrencies)
        return lambda fh: write_csv_with_speed(self.table, fh, self.cols, idx, concurrencies=concs)

    def write_aside(self, stream: Any) -> None:
        if self.aside is not None:
            stream.write(self.aside + "\n")


@REGISTRY.renders(SweepAnswer, Format.TABLE)
def _sweep_table(a: SweepAnswer, echo: Echo) -> None:
    if a.output:  # the file first: a reader that closes stdout early does not lose it
        a.write(a.csv_writer(a.order("concurrency")))
    from kvplan.views.sweep import render_table

    render_table(
        a.table,
        sort=a.sort or "concurrency",
        top=a.top,
        console=_terminal(),
        speed=a.cols,
        concurrencies=list(a.concurrencies),
        order=a.speed_order,
    )
    a.write_aside(sys.stdout)


@REGISTRY.renders(SweepAnswer, Format.CSV)
def _sweep_csv(a: SweepAnswer, echo: Echo) -> None:
    a.write(a.csv_writer(a.order(None)))
    a.write_aside(sys.stdout if a.output else sys.stderr)


@REGISTRY.renders(SweepAnswer, Format.JSONL)
def _sweep_jsonl(a: SweepAnswer, echo: Echo) -> None:
    idx = a.order(None)
    if a.cols is not None:
        from kvplan.planning.sweep.speed import write_jsonl_with_speed

        concs = list(a.concurrencies)
        a.write(lambda fh: write_jsonl_with_speed(a.table, fh, a.cols, idx, concurrencies=concs))
    else:
        a.write(lambda fh: a.table.write_jsonl(fh, idx))
    a.write_aside(sys.stdout if a.output else sys.stderr)


@REGISTRY.answer(default=Format.JSON)
class SolveAnswer:
    """``kvplan solve QUESTION`` (every question but ``config``): the answer and every rejected candidate."""

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.result = result


@REGISTRY.renders(SolveAnswer, Format.TABLE)
def _solve_table(a: SolveAnswer, echo: Echo) -> None:
    from kvplan.views.solve import render

    render(a.result, console=_terminal())


@REGISTRY.renders(SolveAnswer, Format.JSON)
def _solve_json(a: SolveAnswer, echo: Echo) -> None:
    from kvplan.views.solve import to_json

    echo(to_json(a.result) + "\n")


REGISTRY.refuse(SolveAnswer, Format.CSV, "solve {question} is written as a table or JSON", "table or json")


@REGISTRY.answer(default=Format.JSON)
class ConfigAnswer:
    """``kvplan solve config``: the best configuration, the runners-up (``top`` in the table) and the rejected."""

    __slots__ = ("result", "top")

    def __init__(self, result: Any, top: int = 5) -> None:
        self.result = result
        self.top = top


@REGISTRY.renders(ConfigAnswer, Format.TABLE)
def _config_table(a: ConfigAnswer, echo: Echo) -> None:
    from kvplan.views.solve import render

    render(a.result, console=_terminal(), top=a.top)


@REGISTRY.renders(ConfigAnswer, Format.JSON)
def _config_json(a: ConfigAnswer, echo: Echo) -> None:
    from kvplan.views.solve import to_json

    echo(to_json(a.result) + "\n")


@REGISTRY.renders(ConfigAnswer, Format.CSV)
def _config_csv(a: ConfigAnswer, echo: Echo) -> None:
    from kvplan.views.solve import config_csv

    _stdout(config_csv(a.result))


@REGISTRY.answer(default=Format.JSON)
class CheckAnswer:
    """``kvplan check PLAN.toml``: one result per deployment of the plan at ``path``."""

    __slots__ = ("path", "results")

    def __init__(self, results: list[Any], path: str = "") -> None:
        self.results = results
        self.path = path


@REGISTRY.renders(CheckAnswer, Format.TABLE)
def _check_table(a: CheckAnswer, echo: Echo) -> None:
    from kvplan.views.check import render

    render(a.results, path=a.path, console=_terminal())


@REGISTRY.renders(CheckAnswer, Format.JSON)
def _check_json(a: CheckAnswer, echo: Echo) -> None:
    from kvplan.views.check import to_json

    echo(to_json(a.results, path=a.path))


@REGISTRY.answer(default=Format.JSON)
class CalibrationAnswer:
    """``kvplan calibrate LOG``: every quantity of the log against the prediction (kvplan.views.calibrate)."""

    __slots__ = ("calibration",)

    def __init__(self, calibration: Any) -> None:
        self.calibration = calibration


def _calibration(fmt: Format) -> Renderer:
    def write(a: CalibrationAnswer, echo: Echo) -> None:
        from kvplan.views.calibrate import render_calibration

        echo(render_calibration(a.calibration, fmt.value))

    return write


for _f in TABLE_JSON_CSV:
    REGISTRY.renders(CalibrationAnswer, _f)(_calibration(_f))


@REGISTRY.answer(default=Format.JSON)
class SpeedCalibrationAnswer:
    """``kvplan calibrate-speed RESULT``: measured vs predicted per metric, the refitted constants, the measured
    point and the file saved (``--save``, or None)."""

    __slots__ = ("point", "result", "saved")

    def __init__(self, result: Any, point: Any, saved: str | None = None) -> None:
        self.result = result
        self.point = point
        self.saved = saved


@REGISTRY.renders(SpeedCalibrationAnswer, Format.TABLE)
def _speed_calibration_table(a: SpeedCalibrationAnswer, echo: Echo) -> None:
    r, point = a.result, a.point
    lines = [
        f"calibrate-speed: {r.deployment}",
        f"measured ({point.source}): {point.input_len:,} in / {point.output_len:,} out, C={point.concurrency}",
        "",
        f"{'metric':<24}{'measured':>12}{'predicted':>12}{'error':>9}{'calibrated':>12}{'error':>9}",
    ]
    lines.extend(
        f"{m.metric:<24}{m.measured:>12,.4g}{m.predicted:>12,.4g}{m.error:>+9.1%}"
        f"{m.calibrated:>12,.4g}{m.calibrated_error:>+9.1%}"
        for m in r.rows
    )
    cal = r.calibration
    lines += [
        "",
        f"GPU class {cal.gpu_class}, engine {cal.engine}: "
        + (", ".join(f"{k} x{v:.3f}" for k, v in sorted(cal.factors.items())) or "no constant refitted")
        + f" (residual {cal.residual:.1%})",
        *r.notes,
    ]
    if a.saved:
        lines.append(f"saved: {a.saved} (use with kvplan speed --calibration {a.saved})")
    echo("\n".join(lines) + "\n")


@REGISTRY.renders(SpeedCalibrationAnswer, Format.JSON)
def _speed_calibration_json(a: SpeedCalibrationAnswer, echo: Echo) -> None:
    import json

    echo(json.dumps(a.result.to_json(), indent=2) + "\n")
