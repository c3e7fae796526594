"""What is installed: one top-level name, ``attnscope``, from the repository's folders as they are.

The checkout keeps engine/, gui/, cli/ and resources/ at its top level (the project's layout);
installed, they are attnscope.engine, attnscope.gui, attnscope.cli and attnscope.resources (package
data), and nothing else lands in site-packages. pyproject.toml holds everything else.
"""
from setuptools import find_packages, setup

CODE = ("engine", "gui", "cli")
packages = ["attnscope", "attnscope.resources"] + [
    f"attnscope.{name}" for name in find_packages(include=[f"{top}*" for top in CODE])]
package_dir = {"attnscope": "attnscope", "attnscope.resources": "resources", **{f"attnscope.{top}": top for top in CODE}}

setup(packages=packages, package_dir=package_dir, package_data={"attnscope.resources": ["**/*"]},
      include_package_data=False)
