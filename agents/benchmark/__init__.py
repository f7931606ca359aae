"""The benchmark: named, versioned tasks, one evaluation protocol, baselines of several
algorithm families, and a frozen rating ladder.

=====================  =====================================================
module                 holds
=====================  =====================================================
:mod:`.tasks`          the task registry (``dice-2p-v0``, ...): environment
                       options, training opponents, budgets, evaluation
:mod:`.algorithms`     the baseline algorithms, one module each, one contract
=====================  =====================================================

This package sits above the trainers (``tests/test_layers.py``): it may import
everything, nothing imports it.
"""
