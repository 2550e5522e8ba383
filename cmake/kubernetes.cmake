# Kubernetes: the fake API server that the discovery tests and `make bench-scaledown` run
# against (real HTTPS, the real list/watch protocol; test code only), and the check that
# deploy/kubernetes renders with `kubectl kustomize` into valid objects.
add_library(fake_kube STATIC
  ${CMAKE_SOURCE_DIR}/tests/support/fake_kube/fake_api_server.cc
  ${CMAKE_SOURCE_DIR}/tests/support/fake_kube/test_tls.cc)
target_include_directories(fake_kube PUBLIC ${CMAKE_SOURCE_DIR}/tests)
target_compile_options(fake_kube PRIVATE ${SWITCHYARD_WARNINGS})
target_link_libraries(fake_kube PUBLIC switchyard_lib)

add_executable(fake-kube-apiserver ${CMAKE_SOURCE_DIR}/tests/support/fake_kube/main.cc)
target_compile_options(fake-kube-apiserver PRIVATE ${SWITCHYARD_WARNINGS})
target_link_libraries(fake-kube-apiserver PRIVATE fake_kube CLI11::CLI11)

if(TARGET integration_tests)
  target_link_libraries(integration_tests PRIVATE fake_kube)
  target_compile_definitions(integration_tests PRIVATE
    SWITCHYARD_FAKE_KUBE_BINARY="$<TARGET_FILE:fake-kube-apiserver>")
  add_dependencies(integration_tests fake-kube-apiserver)
endif()

# Renders every kustomization under deploy/kubernetes and validates each object offline.
# Skipped (77) when kubectl is missing (scripts/install-deps.sh installs it).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME deploy.kubernetes_manifests
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/deploy/validate_manifests.py
            ${CMAKE_SOURCE_DIR}/deploy/kubernetes)
  set_tests_properties(deploy.kubernetes_manifests PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
