"""What every robot_dynid node shares: the main() life cycle and parameter declaration."""
from __future__ import annotations

import sys

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException

from robot_dynid.errors import DynIdError


def declare(node, name, default, description, unit=None):
    """Declare a parameter with a description that states its unit; return its value."""
    text = f"{description} [{unit}]" if unit else description
    return node.declare_parameter(name, default, ParameterDescriptor(description=text)).value


def spin_node(node_class, args=None):
    """``rclpy.init``, spin ``node_class()`` until Ctrl-C / SIGTERM / shutdown, clean up.

    Returns the process exit code: 0, or 2 when the node cannot start because a parameter or a
    file it names is wrong (one line on stderr naming it, no traceback). The node's ``close()``
    (if any) runs before the node is destroyed, so recorders can flush files on every way out.
    """
    rclpy.init(args=args)
    node = None
    try:
        node = node_class()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (DynIdError, FileNotFoundError) as error:
        print(f"{node_class.__name__}: error: {error}", file=sys.stderr)
        return 2
    except Exception:
        # A signal shuts the context down while the executor may be taking a message; what that
        # raises is part of shutting down, not a failure.
        if rclpy.ok():
            raise
    finally:
        if node is not None:
            close = getattr(node, "close", None)
            if close is not None:
                close()
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
