"""Fixtures that bring the stack up as processes, in rootful containers and in rootless ones.

`stack` is parametrised over the three (process, container, rootless); the container ones are
marked `container`. `container` is root's own podman when the tests run as root, else the user's
(rootless); `rootless` is always an unprivileged user's podman (tests/integration/engines.py).
Without an engine and the image the container cases are skipped, except where CI=true: there a
container test that cannot run fails, since a skip would hide it. At the end of a run that made
containers, a conmon process of theirs still running fails the run (exec sessions).
"""

import os
import time

import pytest

from tests.integration.container_stack import CREATED_CONTAINERS, ContainerStack
from tests.integration.engines import Engine, conmons_of, engine, engine_problem
from tests.integration.stack import IMAGE, ProcessStack, short_temp_home

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _cannot_run(reason: str):
    if IN_CI:
        pytest.fail(f"CI=true and the container test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _container_engine_problem(name: str) -> str | None:
    """Why the engine name (rootful, rootless) cannot run the stack here, or None when it can."""
    problem = engine_problem(name)
    if problem:
        return problem
    try:
        import docker

        url = engine(name).docker_host
        client = docker.DockerClient(base_url=url)
        try:
            client.ping()
            client.images.get(IMAGE)
        finally:
            client.close()
    except ImportError:
        return "the docker client library is missing (pip install -e '.[test]')"
    except Exception as e:  # noqa: BLE001 - any failure here means: no usable engine
        return f"{IMAGE} is not usable through {url}: {e}"
    return None


@pytest.fixture(scope="session")
def container_engine() -> Engine:
    """The default engine (rootful as root, else rootless); skip or, where CI=true, fail."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    name = "rootful" if os.getuid() == 0 else "rootless"
    problem = _container_engine_problem(name)
    if problem:
        _cannot_run(problem)
    return engine(name)


@pytest.fixture(scope="session")
def rootless_engine() -> Engine:
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    problem = _container_engine_problem("rootless")
    if problem:
        _cannot_run(problem)
    return engine("rootless")


@pytest.fixture
def process_stack():
    stack = ProcessStack(short_temp_home("bx-proc-")).start()
    try:
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


def _running_container_stack(eng: Engine):
    stack = ContainerStack(short_temp_home(f"bx-{eng.name}-"), eng)
    try:
        stack.start()
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def container_stack(container_engine):
    yield from _running_container_stack(container_engine)


@pytest.fixture
def rootless_stack(rootless_engine):
    yield from _running_container_stack(rootless_engine)


@pytest.fixture(
    params=[
        "process",
        pytest.param("container", marks=pytest.mark.container),
        pytest.param("rootless", marks=pytest.mark.container),
    ]
)
def stack(request):
    """The stack as processes, in containers (rootful as root), and under rootless podman."""
    yield request.getfixturevalue(f"{request.param}_stack")


_container_tests_passed = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where CI=true a container test that skips, for whatever reason, is reported as failed."""
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("container") is None:
        return
    if report.skipped and IN_CI:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"CI=true: a container test may not skip ({reason})"
    elif report.when == "call" and report.passed:
        _container_tests_passed.append(item.nodeid)


def _leftover_conmons(wait: float = 15.0) -> list[str]:
    """conmon processes of the containers these tests made, after giving them wait seconds."""
    deadline = time.monotonic() + wait
    while True:
        left = conmons_of(CREATED_CONTAINERS)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def pytest_sessionfinish(session, exitstatus):
    """scripts/test sets BOXMAKER_REQUIRE_CONTAINER_TESTS=1: then no container test run fails.
    Whenever container tests ran, a conmon of theirs still running afterwards fails the run."""
    if os.environ.get("BOXMAKER_REQUIRE_CONTAINER_TESTS") == "1" and not _container_tests_passed:
        print("\nBOXMAKER_REQUIRE_CONTAINER_TESTS=1 but no container test passed")
        session.exitstatus = 1
    if CREATED_CONTAINERS:
        left = _leftover_conmons()
        if left:
            print(f"\n{len(left)} conmon processes of the tests' containers are left:")
            print("\n".join(left[:10]))
            session.exitstatus = 1
        else:
            print(f"\nno conmon left of the {len(CREATED_CONTAINERS)} containers the tests made")
