"""``python -m agents.benchmark`` (``qwinto-benchmark``): run cells, rebuild the table,
rate an agent.

::

    python -m agents.benchmark list
    python -m agents.benchmark run --task dice-2p-v0 --algo ppo --seed 0     # one cell
    python -m agents.benchmark run --task dice-2p-v0,cards-2p-v0 --algo all --seed 0,1,2 --jobs 2
    python -m agents.benchmark run --task dice-2p-v0 --algo my_algo --seed 0 --steps 5000
    python -m agents.benchmark table                   # docs/benchmark/ and docs/benchmark.md
    python -m agents.benchmark rate --task dice-2p-v0 --agent runs/dice-2p/final.pt
    python -m agents.benchmark rate --task dice-2p-v0 --agent mypackage.bots:MyAgent

``run`` skips the cells already done (their ``result.json``), so an interrupted suite
continues where it stopped. ``--algo`` takes the baselines' names, or the import path of
your own module that keeps the contract of :mod:`agents.benchmark.algorithms`
(``my_algo`` for ``my_algo.py`` in the working folder). ``table`` adds the shipped
baselines' cells (``--baselines``, ``docs/benchmark/results.json``) that ``--root``
lacks; it writes the shipped page and files for the ``cpu`` budget,
``<root>/table-<budget>/`` for another (``--out``, ``--doc`` choose), and a rewritten
``results.json`` keeps other budgets' cells. ``--agent`` takes what :func:`agents.load`
takes: a name, a checkpoint, or ``module:Class`` for your own
:class:`agents.base.Agent` subclass.

Exit status: 0 done; 1 the command ran and failed (``table`` found no finished cells, an
agent broke the rules during play: the message names it, its illegal action and the
legal ones; an algorithm's ``train`` returned no agent); 2 a bad command line (with the
usage line); 130 interrupted.
"""

from __future__ import annotations

import argparse
import functools
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Sequence

from tqdm import tqdm

from qwinto_env.console import command_exits, say
from qwinto_env.fileio import output_problem

from ..evaluate import MAX_GAMES, EvaluationError
from ..load import load
from ..trainers.config import MAX_PROCESSES, MAX_STEPS, MAX_THREADS
from .algorithms import (ALGORITHMS, AlgorithmError, check_steps, get_algorithm,
                         require_algorithm)
from .extras import MissingExtra
from .tasks import TASKS, get_task

DOC = Path("docs/benchmark.md")
#: the shipped baselines' cells, which ``table`` adds where --root lacks them
BASELINES = Path("docs/benchmark/results.json")
#: docs/benchmark.md's generated part lies between these lines
TABLE_START, TABLE_END = "<!-- table: start -->", "<!-- table: end -->"


def _expand(value: str, known: Sequence[str]) -> list[str]:
    """The comma-separated names in ``value``, ``all`` standing for every one of ``known``,
    each once, in the order given."""
    names = [n for v in value.split(",") for n in (known if v == "all" else [v])]
    return list(dict.fromkeys(names))  # a cell named twice runs once


def _names(value: str, known: Sequence[str], what: str) -> list[str]:
    names = _expand(value, known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(map(repr, unknown))}; "
                                         f"known: {', '.join(known)} (or all)")
    return names


def _algorithms(value: str) -> list[str]:
    """``--algo``: names of :data:`ALGORITHMS` (``all``: every baseline) and import paths of
    the user's own modules that keep the contract, separated by commas
    (``all,my_algo``: the baselines and yours)."""
    names = _expand(value, list(ALGORITHMS))
    for name in names:
        try:
            get_algorithm(name)
        except KeyError as exc:
            raise argparse.ArgumentTypeError(f"{exc.args[0]} (or all)")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc))
    return names


def _seeds(value: str) -> list[int]:
    try:
        seeds = [int(s) for s in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are integers separated by commas, got {value!r}")
    if any(not 0 <= s < 2 ** 32 for s in seeds):  # what every library's seeding takes
        raise argparse.ArgumentTypeError(f"seeds must be in 0..{2 ** 32 - 1}, got {value!r}")
    return list(dict.fromkeys(seeds))


def _count(most: int, why: str) -> Callable[[str], int]:
    """An option's type: an integer from 1 to ``most``; ``why`` says where the limit
    comes from."""
    def count(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = 0
        if not 1 <= number <= most:
            raise argparse.ArgumentTypeError(f"must be a positive integer of at most "
                                             f"{most:,} ({why}), got {value!r}")
        return number
    return count


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agents.benchmark",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the tasks and the algorithms")
    run = sub.add_parser("run", help="run cells (task x algorithm x seed) not yet done")
    run.add_argument("--task", required=True, type=lambda v: _names(v, list(TASKS), "task"))
    run.add_argument("--algo", required=True,
                     type=_algorithms, help="baselines (all: every one) and your modules' "
                                            "import paths: e.g. ppo,dqn or all,my_algo")
    run.add_argument("--seed", required=True, type=_seeds, help="e.g. 0 or 0,1,2")
    size = run.add_mutually_exclusive_group()
    size.add_argument("--budget", choices=["cpu", "gpu"], default="cpu")
    size.add_argument("--steps", type=_count(MAX_STEPS, "a year at 30,000 steps a second"),
                      help="another budget (results: 'custom')")
    run.add_argument("--threads", type=_count(MAX_THREADS, "more than any machine's cores"),
                     default=1, help="torch threads per cell")
    run.add_argument("--jobs", type=_count(MAX_PROCESSES, "a Python process each"), default=1,
                     help="cells run at once")
    run.add_argument("--root", default="benchmark_runs", help="where cells are kept")
    run.add_argument("--no-progress", action="store_true")
    table = sub.add_parser("table", help="rebuild the table and plots from finished cells")
    table.add_argument("--root", default="benchmark_runs")
    table.add_argument("--budget", choices=["cpu", "gpu", "custom"], default="cpu")
    table.add_argument("--out", help="results.json, table.csv, PNGs (default: docs/benchmark "
                                      "for the cpu budget, else <root>/table-<budget>)")
    table.add_argument("--doc", help="Markdown file whose generated table is replaced ('' "
                                     "for none; default: docs/benchmark.md for the cpu "
                                     "budget, else none)")
    table.add_argument("--baselines", default=str(BASELINES),
                       help="a table's results.json whose cells --root lacks are added (the "
                            "default: the shipped baselines; '' for --root alone)")
    rate = sub.add_parser("rate", help="score your agent on a task (its rating, win rates)")
    rate.add_argument("--task", required=True, choices=list(TASKS))
    rate.add_argument("--agent", required=True,
                      help="an agents.load spec or a checkpoint, or module:Class")
    rate.add_argument("--games", type=_count(MAX_GAMES, "the evaluator keeps every game "
                                                        "in memory"),
                      help="games per reference for a quick look (default: the task's; "
                           "only the task's count is its score)")
    rate.add_argument("--json", help="also write the metrics here")
    return p


def run(args: argparse.Namespace) -> int:
    if Path(args.root).exists() and not Path(args.root).is_dir():
        raise ValueError(f"argument --root: {args.root!r} is a file, not a folder")
    for algorithm in args.algo:  # every library present before the first cell starts
        require_algorithm(algorithm)
    for algorithm in args.algo:  # and every budget enough
        for task in map(get_task, args.task):
            try:
                check_steps(algorithm, task, args.steps or task.budget.steps(args.budget))
            except ValueError as exc:
                raise ValueError(f"argument --steps: {exc}") from None
    from .runner import run_cell

    # A job names run_cell in its module: a spawned worker finds it there, where it would
    # not find a function of this one (run as __main__ by `python -m`).
    jobs = [functools.partial(run_cell, t, a, s, budget=args.budget, steps=args.steps,
                              root=args.root, threads=args.threads,
                              progress=not args.no_progress and args.jobs == 1)
            for t in args.task for a in args.algo for s in args.seed]
    bar = tqdm(total=len(jobs), desc="cells", unit="cell", disable=args.no_progress or
               len(jobs) == 1, position=1 if args.jobs == 1 else 0, leave=True)
    finished = []
    if args.jobs == 1:
        for job in jobs:
            finished.append(job())
            bar.update()
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            for future in as_completed([pool.submit(job) for job in jobs]):
                finished.append(future.result())
                bar.update()
    bar.close()
    for r in sorted(finished, key=lambda r: (r["task"], r["algorithm"], r["seed"])):
        f = r["final"]
        score = f.get("rating", f["mean_score"])
        print(f"{r['task']} {r['algorithm']} seed {r['seed']}: "
              f"{'rating' if 'rating' in f else 'mean score'} {score:.1f}, "
              f"{r['train_seconds'] / 60:.1f} min")
    return 0


def _doc_page(path: str) -> str:
    """The text of ``--doc``; ValueError unless it is a Markdown file with the table's
    markers that can be replaced."""
    if Path(path).is_file():
        problem = output_problem(path)
    else:
        problem = "is a directory" if Path(path).is_dir() else (
            "does not exist (the default is docs/benchmark.md of the project's root; "
            "--doc '' writes no page)")
    page = Path(path).read_text() if problem is None else ""
    if problem is None and (TABLE_START not in page or TABLE_END not in page):
        problem = f"has no {TABLE_START} ... {TABLE_END} section"
    if problem:
        raise ValueError(f"argument --doc: {path!r} {problem}")
    return page


def _baselines(path: str, budget: str) -> list[dict[str, Any]]:
    """The cells of ``--baselines`` for ``budget``; ValueError naming the option."""
    from .runner import read_results_file

    if not Path(path).is_file():
        raise ValueError(f"argument --baselines: {path!r} " + (
            "is not a file" if Path(path).exists() else
            "does not exist (the default is the shipped baselines, docs/benchmark/results.json "
            "of the project's root; --baselines '' builds from --root alone)"))
    try:
        return read_results_file(path, budget)
    except ValueError as exc:
        raise ValueError(f"argument --baselines: {exc}") from None


def _table_defaults(args: argparse.Namespace) -> None:
    """The shipped page and files hold the cpu budget's table: another budget's goes to
    its own folder by default, so that a try with ``--steps`` replaces neither."""
    if args.budget == "cpu":
        args.out = "docs/benchmark" if args.out is None else args.out
        args.doc = str(DOC) if args.doc is None else args.doc
    else:
        args.out = str(Path(args.root) / f"table-{args.budget}") if args.out is None else args.out
        args.doc = "" if args.doc is None else args.doc


def _other_budgets(path: Path, budget: str) -> list[dict[str, Any]]:
    """The cells of other budgets in ``--out``'s results.json, which the rewritten file
    keeps; ValueError naming the option if the file is there but no table's."""
    from .runner import read_results_file

    if not path.exists():
        return []
    try:
        return [r for r in read_results_file(path, None) if r["budget"] != budget]
    except ValueError as exc:
        raise ValueError(f"argument --out: {exc}") from None


def table(args: argparse.Namespace) -> int:
    from .report import build
    from .runner import merge_results, read_results

    _table_defaults(args)
    page = _doc_page(args.doc) if args.doc else ""
    baselines = _baselines(args.baselines, args.budget) if args.baselines else None
    if not args.out:  # Path('') is the working folder: '' means "none" to --doc
        raise ValueError("argument --out: '' is no folder (leave --out out for the default)")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise ValueError(f"argument --out: {args.out!r} is a file, not a folder")
    kept = _other_budgets(Path(args.out) / "results.json", args.budget)
    results = read_results(args.root, args.budget)
    if baselines is not None:  # the user's own cells win
        results = merge_results(results, baselines)
    if not results:
        print(f"no finished cells for budget {args.budget} under {args.root}"
              + (f" or in {args.baselines}" if args.baselines else ""), file=sys.stderr)
        return 1
    text = build(results, args.out, keep=kept)
    print(text)
    if args.doc:
        doc = Path(args.doc)
        head, rest = page.split(TABLE_START, 1)
        from qwinto_env.fileio import atomic_write_text
        atomic_write_text(doc, head + TABLE_START + "\n" + text + "\n" + TABLE_END
                          + rest.split(TABLE_END, 1)[1])
    return 0


def rate(args: argparse.Namespace) -> int:
    from .protocol import evaluate

    task = get_task(args.task)
    if args.json is not None and (problem := output_problem(args.json)):
        raise ValueError(f"argument --json: {args.json!r} {problem}")
    try:
        agent = load(args.agent, game=task.game, num_players=task.num_players)
    except ValueError as exc:
        raise ValueError(f"argument --agent: {exc}") from None
    metrics = evaluate(agent, task, games=args.games)
    for key, value in metrics.items():
        print(f"{key:>28}  {value:,.3f}" if isinstance(value, float) else f"{key:>28}  {value}")
    if args.json:
        from qwinto_env.fileio import atomic_write_json
        atomic_write_json(args.json, {"task": task.id, "agent": args.agent, **metrics},
                          indent=1)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    with command_exits(p.prog):
        return _command(p, args)


def _command(p: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "list":
        for task in TASKS.values():
            print(f"{task.id:14} {task.description}; {task.budget.cpu:,} steps (CPU)")
        for name in ALGORITHMS:
            module = get_algorithm(name)
            try:
                require_algorithm(name)
                missing = ""
            except MissingExtra as exc:
                missing = f" [not installed: {exc.install}]"
            print(f"{name:14} {module.FAMILY}; {module.LIBRARY}; masks: {module.MASKS}{missing}")
        return 0
    try:
        return {"run": run, "table": table, "rate": rate}[args.command](args)
    except EvaluationError as exc:
        if exc.argument is not None:  # a setting of the games: the command line's
            p.error(str(exc))
        say(p.prog, "error", exc)  # an agent broke the rules: not the command line's fault
        return 1
    except AlgorithmError as exc:
        say(p.prog, "error", exc)
        return 1
    except (ValueError, MissingExtra) as exc:
        p.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
