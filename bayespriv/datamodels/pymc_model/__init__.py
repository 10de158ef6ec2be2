"""The parts of :class:`~bayespriv.datamodels.PyMCDataModel`, one module per stage of its routes.

``graph``        graph helpers (lazy PyMC import, ancestors, shapes, constants, element names)
``checks``       checks of the model's columns and parameters and of the secrets it conditions on
``plans``        the sampling plan of each secret (route, what is fixed, observed and drawn)
``pivots``       the pivot of a secret on a deterministic
``conditioned``  the PyMC models MCMC samples (observed, pivoted, pruned)
``batched``      compiled batched samplers (one PyTensor function per set of given variables)
``posterior``    posterior cache keys, MCMC runs and their convergence checks
``tabulated``    exact posteriors of a single scalar latent variable (the quadrature route)

Each module holds one part (a mixin) of the data model; the data model itself, its public methods and
its per-process runtime are in :mod:`bayespriv.datamodels.pymc`.
"""
