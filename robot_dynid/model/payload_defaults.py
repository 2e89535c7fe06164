"""Defaults and limits of payloads (:mod:`robot_dynid.model.payload`, which uses them from here).

No imports, so that ``robot-dynid payload``'s parser reads them without loading pinocchio (0.1 s of its --help)."""

__all__ = ["DEFAULT_DENSITY", "MIN_DENSITY", "MAX_DENSITY", "PRIOR_STD_FRACTION", "DEFAULT_MAX_COM_DISTANCE",
           "IMPLAUSIBLE_MASS_FACTOR", "CONSISTENCY_RTOL", "MAX_MASS", "MIN_MASS", "MAX_COM_DISTANCE", "MAX_EXTENT"]

#: [kg/m^3] default density of the solid body a payload's mass and centre of mass imply (a tool or gripper of
#: aluminium housings, motors and air: about that of water).
DEFAULT_DENSITY = 1000.0
#: [kg/m^3] densities a payload's solid body may have (``--density``): from foam to tungsten, with margin.
MIN_DENSITY, MAX_DENSITY = 1.0, 25_000.0
#: [1] std of the inertia prior (payload identification) on each inertia parameter, as a fraction of the prior
#: body's largest principal moment about its centre of mass: a tool's shape guessed within about a factor of two.
PRIOR_STD_FRACTION = 0.5
#: Default bound [m] on the centre of mass's distance from the payload frame, beyond which a payload
#: is reported as implausible (a unit mistake, or an identification that found nothing real).
DEFAULT_MAX_COM_DISTANCE = 1.0
#: A mass above this many times the robot's rated payload is reported as implausible.
IMPLAUSIBLE_MASS_FACTOR = 2.0
#: Rounding allowed in the consistency check, relative to the largest entry of the pseudo-inertia [1]:
#: a point mass (zero inertia) or a thin rod (a triangle inequality with equality) pass.
CONSISTENCY_RTOL = 1e-9
#: Largest mass accepted [kg]: anything heavier is a unit mistake (grams).
MAX_MASS = 1e5
#: [kg] the lightest payload: below a gram a payload's torques are below any arm's torque resolution.
MIN_MASS = 1e-3
#: [m] the farthest a payload's centre of mass may be from its frame: beyond any arm's reach (the warning at
#: DEFAULT_MAX_COM_DISTANCE comes first).
MAX_COM_DISTANCE = 10.0
#: [m] the largest extent of a payload body: its central moments of inertia are at most ``mass * MAX_EXTENT**2``
#: (a body of mass m has no moment above m r^2, r its farthest point from the centre).
MAX_EXTENT = 10.0
