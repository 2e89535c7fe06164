"""ROS 2 nodes: thin adapters from messages and parameters to core calls (the only rclpy users)."""
