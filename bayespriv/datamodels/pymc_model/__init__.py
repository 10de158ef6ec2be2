"""The collaborators of :class:`~bayespriv.datamodels.PyMCDataModel`, one module per stage of its routes.

``runtime``       :class:`~.runtime.Runtime`: the built model and the per-process memos of the collaborators
``graph``         graph helpers (lazy PyMC import, ancestors, shapes, constants, element names)
``model_checks``  :func:`~.model_checks.check_model`, :func:`~.model_checks.check_intervals` and
                  :class:`~.model_checks.SecretChecker`: the model's columns and parameters, the secrets it
                  conditions on
``plans``         :class:`~.plans.PlanBuilder`: the sampling :class:`~.plans.Plan` of each secret (route, what is
                  fixed, observed and drawn)
``pivots``        :class:`~.pivots.PivotFinder`: the pivot of a secret on a deterministic
``conditioned``   :class:`~.conditioned.ConditionedModelBuilder`: the PyMC models MCMC samples (observed,
                  pivoted, pruned)
``batched``       :class:`~.batched.BatchedSampler`: compiled batched samplers (one PyTensor function per set of
                  given variables), fixed givens and rejection rounds
``posterior``     :class:`~.posterior.PosteriorRunner`: posterior cache keys, MCMC runs and their convergence checks
``tabulated``     :class:`~.tabulated.TabulatedPosteriors`: exact posteriors of a single scalar latent variable
                  (the quadrature route)

The data model owns one instance of each class (built from its settings after construction, unpickling and
copying; never pickled) and hands them the hooks a subclass may override; each reaches the per-process
:class:`~.runtime.Runtime` through the data model's lookup. The data model itself, its public methods and the
registry of runtimes are in :mod:`bayespriv.datamodels.pymc`.
"""
