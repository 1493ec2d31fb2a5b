"""bench_engine's workload: the ctrl that makes position actuators hold a pose."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import mujoco
import numpy as np

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_engine.py"

XML = """
<mujoco>
  <worldbody>
    <body>
      <joint name="a" type="hinge"/>
      <geom size="0.1"/>
      <body pos="0 0 0.3">
        <joint name="b" type="hinge"/>
        <geom size="0.1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="b" kp="20"/>
    <motor joint="a"/>
    <position joint="a" kp="5"/>
  </actuator>
</mujoco>
"""


def _load():
    spec = importlib.util.spec_from_file_location("bench_engine", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_engine"] = module
    spec.loader.exec_module(module)
    return module


def test_standing_ctrl_holds_each_position_actuators_joint_and_leaves_motors_at_zero():
    bench = _load()
    model = mujoco.MjModel.from_xml_string(XML)
    qpos = np.array([0.25, -0.5])
    ctrl = bench._standing_ctrl(mujoco, model, qpos)
    np.testing.assert_array_equal(ctrl, [-0.5, 0.0, 0.25])
    # held there, the servos exert no force: ctrl is each servo's equilibrium
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    data.ctrl[:] = ctrl
    mujoco.mj_forward(model, data)
    np.testing.assert_allclose(data.actuator_force, 0.0, atol=1e-12)
