"""The handout's build (build.py), its generated numbers and figures (figures.py, questions.py) and the contract
items it states (contract.py): all from the reference, never typed."""
