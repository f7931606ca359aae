"""The benchmark: named, versioned tasks, one evaluation protocol, baselines of several
algorithm families, and a frozen rating ladder.

=====================  =====================================================
module                 holds
=====================  =====================================================
:mod:`.tasks`          the task registry (``dice-2p-v0``, ...): environment
                       options, training opponents, budgets, evaluation
:mod:`.algorithms`     the baseline algorithms, one module each, one contract
:mod:`.protocol`       how an agent is scored on a task:
                       ``evaluate(agent, "dice-2p-v0")``
:mod:`.ladder`         the frozen rating ladders the scores are on
:mod:`.runner`         a cell (task x algorithm x seed) trained and scored
:mod:`.report`         the table and plots from finished cells
=====================  =====================================================

This package sits above the trainers (``tests/test_layers.py``): it may import
everything, nothing imports it.
"""
