"""The proofs of ``ackfilter.formal`` under pytest: each proves by
k-induction, reaches its cover statements (the assumptions leave the
assertions something to check),
and fails on every mutation of its block (the proof sees the fault it is
about; ``make formal``, or ACKFILTER_MUTATIONS=1). ``make formal`` prints
the same as a table."""

import os

import pytest
from amaranth.hdl import Fragment

from ackfilter.formal import run
from ackfilter.formal.proofs import PROOFS

# (Each SymbiYosys run has a directory of its own: the tests spread over
# the pytest workers.)


@pytest.mark.parametrize("proof", PROOFS, ids=lambda p: p.name)
def test_the_proof_holds(proof, tmp_path):
    proven = run(proof.name, proof.make(), depth=proof.depth, mode="prove", workdir=tmp_path)
    assert proven.passed, proven.log[-3000:]


COVERED = [p for p in PROOFS if p.cover_depth is not None]


@pytest.mark.parametrize("proof", COVERED, ids=lambda p: p.name)
def test_its_covers_are_reached(proof, tmp_path):
    covered = run(proof.name, proof.make(), depth=proof.cover_depth, mode="cover", workdir=tmp_path)
    assert covered.passed, covered.log[-3000:]


MUTATIONS = [(p, name, make) for p in PROOFS for name, make in p.mutations.items()]
MUTATION_IDS = [f"{p.name}: {n}" for p, n, _ in MUTATIONS]
#: The mutations' solver runs (a minute or two of CPU in all) are `make
#: formal`'s, and run here with ACKFILTER_MUTATIONS=1; `make test` applies
#: each mutation and elaborates its harness, so that a mutation whose text
#: the block no longer has, or whose code no longer elaborates, fails here
#: too. (Elaborated only: its RTLIL, five times the time, is the solver
#: run's.)
RUN_MUTATIONS = os.environ.get("ACKFILTER_MUTATIONS") == "1"


@pytest.mark.parametrize("proof, name, make", MUTATIONS, ids=MUTATION_IDS)
def test_each_mutation_applies_and_elaborates(proof, name, make):
    Fragment.get(make(), None)


@pytest.mark.skipif(not RUN_MUTATIONS, reason="make formal runs them (or ACKFILTER_MUTATIONS=1)")
@pytest.mark.parametrize("proof, name, make", MUTATIONS, ids=MUTATION_IDS)
def test_the_proof_fails_on_a_mutation_of_its_block(proof, name, make, tmp_path):
    result = run(proof.name, make(), depth=proof.depth, mode="prove", workdir=tmp_path)
    assert not result.passed, f"the proof held on the mutation {name!r}"


def test_a_proof_without_covers_of_its_own_names_the_proof_that_reaches_them():
    """A harness that runs no cover of its own extends another's, whose
    covers (and so its assumptions' satisfiability) are reached."""
    covered = {p.name for p in COVERED}
    for p in PROOFS:
        if p.cover_depth is None:
            assert p.covered_by in covered, p.name


def test_a_mutation_must_match_its_text_once():
    from ackfilter.formal.harness import mutant
    from ackfilter.gateware.lib import buffer_pool
    with pytest.raises(ValueError, match="exactly once"):
        mutant(buffer_pool, "no such text", "x")
