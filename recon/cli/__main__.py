"""`python -m recon.cli`: the same entry point as the `recon` console script."""

from recon.cli import main

main()
