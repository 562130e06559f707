//! [`solve`]: one resolution, from [`Problem`] to [`Outcome`] or an explanation.

use resolvo::{Solver, UnsolvableOrCancelled};

use super::order::World;
use super::provider::Provider;
use super::{Outcome, Problem, SolveError, explain, plan};

/// Resolves the Subscription of `problem` together with every dependency (see the module
/// documentation for the order in which candidates are tried).
pub fn solve(problem: &Problem<'_>) -> Result<Outcome, SolveError> {
    let world = World::new(problem)?;
    let provider = Provider::new(world);
    let requirements = provider.root_requirements();
    let mut solver = Solver::new(provider);
    match solver.solve(resolvo::Problem::new().requirements(requirements)) {
        Ok(chosen) => plan::outcome(solver.provider(), &chosen),
        Err(UnsolvableOrCancelled::Unsolvable(conflict)) => {
            Err(explain::explain(&solver, &conflict))
        }
        // The provider never cancels.
        Err(UnsolvableOrCancelled::Cancelled(_)) => Err(SolveError::Unsatisfiable {
            message: "resolution was cancelled".to_owned(),
        }),
    }
}
