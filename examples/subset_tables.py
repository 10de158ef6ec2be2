"""Release the graduates table (Tan, Table 2) with exact programme totals, and account for it.

Income band is protected (ε-privacy on {income}, Algorithm 1); the degree programme is public, so
its totals are released exactly. A ledger in a temporary directory holds the budget of "income";
the per-variable ε table shows what each release cost on each variable (Propositions 3.3–3.5).

Run:  python examples/subset_tables.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 20)

import bayespriv as bp
from bayespriv.ledger import Ledger, TableLayout, VariableRelease, epsilon_table

BANDS = ["<$30k", "$30-40k", "$40-50k", "$50-60k", "$60-80k", "$80-100k", "$100-120k", "$120k+"]
COUNTS = {
    "Bachelor of Arts": [5, 10, 47, 68, 54, 33, 12, 2],
    "Bachelor of Science": [1, 13, 44, 92, 131, 75, 21, 15],
    "Bachelor of Engineering": [2, 25, 78, 218, 237, 153, 46, 18],
}

# Table 2 as counts per (programme, band); a table of records works the same without count=.
survey = pd.DataFrame(
    [(deg, band, n) for deg, row in COUNTS.items() for band, n in zip(BANDS, row)],
    columns=["degree", "income", "n"],
)
layout = TableLayout(
    protected_values=BANDS,                 # the possible bands, fixed before looking at the data
    public_values=list(COUNTS),
    count="n",
)

with tempfile.TemporaryDirectory() as tmp:
    ledger = Ledger(Path(tmp) / "graduates.sqlite")
    ledger.set_budget("income", epsilon=2.0)

    # Ask the cost first: every cell's noise variance (8 income bands per programme).
    mechanism = bp.SubsetCountMechanism(protected="income", public="degree", epsilon=1.0)
    print(f"cell noise variance at ε = 1: {float(mechanism.cell_variance(8)):.1f}")

    release = mechanism.release(
        survey, layout=layout,
        nonnegative=True,                   # post-processing: same guarantee, no negative counts
        ledger=ledger,                      # budget checked and spent before any noise is drawn
    )
    table = release.value
    print(table.assign(Total=table.sum(axis=1)))  # totals equal the true programme totals
    print(release.guarantee)

    # A second table of the same variable spends more of the same budget; a third would be refused.
    mechanism.release(survey, layout=layout, ledger=ledger)
    try:
        mechanism.release(survey, layout=layout, ledger=ledger)
    except bp.BudgetExceededError as err:
        print("refused:", err)

    print(ledger.report())
    print(ledger.epsilon_table(["income", "degree", "age"]))  # age: never used, ε = 0

# The paper's Example 3.6 (Table 1): three ε = 1 DP tables.
example = [
    VariableRelease("Table A", 1, ["age", "sex"]),
    VariableRelease("Table B", 1, ["residential region", "race"]),
    VariableRelease("Table C", 1, ["residential region", "age"]),
]
print(epsilon_table(example, ["age", "sex", "residential region", "race", "other variable"],
                    total="Tables A, B & C"))
