# SPDX-License-Identifier: GPL-2.0-or-later
"""The e2e harness: throwaway Slurm clusters on this machine (slurm_cluster, slurm_config,
slurm_jobs, node_namespace, node_init), the test accounts and their uids (e2e_accounts),
processes (e2e_processes), leftover configs, log watching and shared fixtures
(plugin_support), the Slurm release (slurm_release).

Imported as `harness.<module>` with tests/ on the path: the e2e tests through
tests/e2e/pytest.ini (`pythonpath = ..`), the soak, the demo and the benchmark through
PYTHONPATH=tests set by the script that starts them (scripts/soak.sh, demo/run, bench/run).
"""
