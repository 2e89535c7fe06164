"""``none``: no friction columns (a robot whose friction is compensated, or a model of rigid-body torques only)."""
from robot_dynid.model.friction_models import FrictionShape

__all__ = ["SHAPE"]

SHAPE = FrictionShape("none", "no friction", (), lambda model, v, scale, a: [])
