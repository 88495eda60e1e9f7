"""The create-and-drop loop: nothing outlives a gradient.

Each iteration: grad(f, argnum=(0, 1))(b, a) on 2x2 arrays, where f computes a traced value from
a, drops it, and returns sum(b). Nothing may outlive an iteration: the dropped node is released
at once and the tape on leaving grad, so the live node count after the loop is 0 and memory does
not grow with the number of iterations.
"""

from . import common

N_LOOP = 10_000


class CreateAndDrop:
    def setup(self):
        common.require("gradcy._core", "stats")
        self.b, self.a = common.small_pair()
        self.grad = common.gradcy_grad(common.ref.dropped, argnum=(0, 1))

    def time_iteration(self):
        self.grad(self.b, self.a)

    def time_iteration_hand(self):
        common.ref.hand_dropped(self.b, self.a)

    def peakmem_loop_10000(self):
        for _ in range(N_LOOP):
            self.grad(self.b, self.a)

    def track_live_nodes_after_loop(self):
        for _ in range(1000):
            self.grad(self.b, self.a)
        return common.core_stats()["live_nodes"]

    track_live_nodes_after_loop.unit = "nodes"

    def track_live_tapes_after_loop(self):
        for _ in range(1000):
            self.grad(self.b, self.a)
        return common.core_stats()["live_tapes"]

    track_live_tapes_after_loop.unit = "tapes"
