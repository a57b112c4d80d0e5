"""The image tests (marked ``image``) build and run the Dockerfile's images with podman.

They take minutes and need root, podman and a local base image, so the plain suite
deselects them (never skips them); ``scripts/image-test`` sets the engine up and runs them
with ``--image``, as a step of ``.ci/run``. Given ``--image``, a missing engine fails them.
"""

from __future__ import annotations

import pytest

from . import engine


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--image",
        action="store_true",
        help="run the image tests (tests/docker, marked image): scripts/image-test does",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--image"):
        return
    image = [i for i in items if i.get_closest_marker("image") is not None]
    if image:
        config.hook.pytest_deselected(items=image)
        items[:] = [i for i in items if i.get_closest_marker("image") is None]


@pytest.fixture(scope="session")
def images() -> dict[str, str]:
    """Every stage of the Dockerfile built (from the layer cache when nothing changed);
    the target name -> its image."""
    missing = engine.missing_tools()
    assert not missing, f"the image tests need {', '.join(missing)}: run scripts/image-test"
    exists = engine.run(["podman", "image", "exists", engine.BASE_IMAGE], check=False)
    assert exists.returncode == 0, f"no {engine.BASE_IMAGE} image: run scripts/image-test"
    for target, tag in engine.STAGE_IMAGES.items():
        engine.build(target, tag)
    return dict(engine.STAGE_IMAGES)
