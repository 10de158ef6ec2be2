"""The test suite of bayespriv (a package: helpers are imported as ``tests._name``)."""
