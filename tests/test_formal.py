"""The proofs of ``ackfilter.formal`` under pytest: each proves by
k-induction, reaches its cover statements (the assertions are not vacuous),
and fails on every mutation of its block (the proof sees the fault it is
about). ``make formal`` prints the same as a table."""

import pytest

from ackfilter.formal import run
from ackfilter.formal.proofs import PROOFS

# SymbiYosys runs in its own directories; one worker runs them all.
pytestmark = pytest.mark.xdist_group("formal")


@pytest.mark.parametrize("proof", PROOFS, ids=lambda p: p.name)
def test_the_proof_holds_and_its_covers_are_reached(proof, tmp_path):
    proven = run(proof.name, proof.make(), depth=proof.depth, mode="prove", workdir=tmp_path)
    assert proven.passed, proven.log[-3000:]
    covered = run(proof.name, proof.make(), depth=proof.cover_depth, mode="cover", workdir=tmp_path)
    assert covered.passed, covered.log[-3000:]


MUTATIONS = [(p, name, make) for p in PROOFS for name, make in p.mutations.items()]


@pytest.mark.parametrize("proof, name, make", MUTATIONS, ids=[f"{p.name}: {n}" for p, n, _ in MUTATIONS])
def test_the_proof_fails_on_a_mutation_of_its_block(proof, name, make, tmp_path):
    result = run(proof.name, make(), depth=proof.depth, mode="prove", workdir=tmp_path)
    assert not result.passed, f"the proof held on the mutation {name!r}"


def test_a_mutation_must_match_its_text_once():
    from ackfilter.formal.harness import mutant
    from ackfilter.gateware.lib import buffer_pool
    with pytest.raises(ValueError, match="exactly once"):
        mutant(buffer_pool, "no such text", "x")
