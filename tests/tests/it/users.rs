use drover_tests::users::{nobody_home, nobody_touches_only_their_jobs};
use drover_tests::{Cluster, Spec};

#[test]
fn users_run_as_themselves_and_touch_only_their_jobs() {
    let c = Cluster::start(Spec::default());
    let home = nobody_home(&c);
    let root_job = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    nobody_touches_only_their_jobs(&c, &home, root_job);
}
