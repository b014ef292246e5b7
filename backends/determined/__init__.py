"""The Determined backend: experiments, trials and commands through the ``determined`` SDK (an optional extra)."""
