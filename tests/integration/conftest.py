"""Fixtures that bring the stack up in process mode and in container mode.

`stack` is parametrised over both modes; the container one is marked `container`. Without a
container engine (no DOCKER_HOST answering, or no image) the container case is skipped, except
where CI=true: there a container test that cannot run fails, since a skip would hide it.
"""

import os

import pytest

from tests.integration.stack import IMAGE, ContainerStack, ProcessStack, short_temp_home

IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _cannot_run(reason: str):
    if IN_CI:
        pytest.fail(f"CI=true and the container test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _container_engine_problem() -> str | None:
    """Why the container stack cannot run here, or None when it can."""
    if not os.environ.get("DOCKER_HOST"):
        return "DOCKER_HOST is not set (scripts/test starts podman's API socket and sets it)"
    try:
        import docker

        client = docker.from_env()
        try:
            client.ping()
            client.images.get(IMAGE)
        finally:
            client.close()
    except ImportError:
        return "the docker client library is missing (pip install -e '.[test]')"
    except Exception as e:  # noqa: BLE001 - any failure here means: no usable engine
        return f"{IMAGE} is not usable through {os.environ['DOCKER_HOST']}: {e}"
    return None


@pytest.fixture(scope="session")
def container_engine() -> None:
    """Skip (or, where CI=true, fail) when no engine and image are here."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    problem = _container_engine_problem()
    if problem:
        _cannot_run(problem)


@pytest.fixture
def process_stack():
    stack = ProcessStack(short_temp_home("bx-proc-")).start()
    try:
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def container_stack(container_engine):
    stack = ContainerStack(short_temp_home("bx-cont-"))
    try:
        stack.start()
        stack.wait_ready()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(params=["process", pytest.param("container", marks=pytest.mark.container)])
def stack(request):
    """The stack, once as processes and once in containers."""
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


def pytest_sessionfinish(session, exitstatus):
    """scripts/test sets BOXMAKER_REQUIRE_CONTAINER_TESTS=1: then no container test run fails."""
    if os.environ.get("BOXMAKER_REQUIRE_CONTAINER_TESTS") == "1" and not _container_tests_passed:
        print("\nBOXMAKER_REQUIRE_CONTAINER_TESTS=1 but no container test passed")
        session.exitstatus = 1
