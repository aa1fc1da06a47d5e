"""Reports people look at after a run (docs/reports.md): a self-contained HTML run report from records and a
summary, and a provider comparison with its Pareto verdict. No network is needed to build or to open them."""
