# The layering check (CMakeLists.txt runs it on every build and as the ctest test `layering`).
#
# Every file under src/<module>/ and include/solar/<module>/ may include the headers of its own
# module and of the modules it depends on, directly or through another module, by the table
# SOLAR_DEPS_<module> (docs/architecture.md, "Layering"). Anything else, and a module folder that
# is not in the table, fails with one line per offending #include:
#   src/ir/parser.cpp:12: error: module 'ir' includes "solar/sol/cache.h" (ir may use: util)
#
#   cmake -DSOLAR_SOURCE_DIR=DIR -DSOLAR_LAYERING_TABLE=FILE -P THIS
# FILE (written by CMakeLists.txt) sets SOLAR_MODULES and each SOLAR_DEPS_<module>.
cmake_minimum_required(VERSION 3.24)

if(NOT DEFINED SOLAR_SOURCE_DIR OR NOT DEFINED SOLAR_LAYERING_TABLE)
  message(FATAL_ERROR "check_layering.cmake: set SOLAR_SOURCE_DIR and SOLAR_LAYERING_TABLE")
endif()
include(${SOLAR_LAYERING_TABLE})

# The modules `module` may use: its dependencies and theirs, in table order.
function(allowed_modules module out)
  set(result "")
  set(pending ${SOLAR_DEPS_${module}})
  while(pending)
    list(POP_FRONT pending dep)
    if(NOT dep IN_LIST SOLAR_MODULES)
      message(FATAL_ERROR "check_layering.cmake: '${module}' depends on unknown module '${dep}'")
    endif()
    if(NOT dep IN_LIST result)
      list(APPEND result ${dep})
      list(APPEND pending ${SOLAR_DEPS_${dep}})
    endif()
  endwhile()
  set(ordered "")
  foreach(m ${SOLAR_MODULES})
    if(m IN_LIST result)
      list(APPEND ordered ${m})
    endif()
  endforeach()
  set(${out} "${ordered}" PARENT_SCOPE)
endfunction()

set(errors "")
foreach(root src include/solar)
  file(GLOB folders LIST_DIRECTORIES true RELATIVE ${SOLAR_SOURCE_DIR}/${root}
       ${SOLAR_SOURCE_DIR}/${root}/*)
  foreach(folder ${folders})
    if(IS_DIRECTORY ${SOLAR_SOURCE_DIR}/${root}/${folder} AND NOT folder IN_LIST SOLAR_MODULES)
      set(e "${root}/${folder}: error: folder of no module in the layering table")
      list(APPEND errors "${e} (CMakeLists.txt, SOLAR_MODULES)")
    endif()
  endforeach()
endforeach()

foreach(module ${SOLAR_MODULES})
  allowed_modules(${module} allowed)
  string(REPLACE ";" ", " allowed_text "${allowed}")
  if(allowed_text STREQUAL "")
    set(allowed_text "none")
  endif()
  file(GLOB_RECURSE files RELATIVE ${SOLAR_SOURCE_DIR}
       ${SOLAR_SOURCE_DIR}/src/${module}/*.cpp ${SOLAR_SOURCE_DIR}/src/${module}/*.h
       ${SOLAR_SOURCE_DIR}/include/solar/${module}/*.h)
  list(SORT files)
  foreach(file ${files})
    file(STRINGS ${SOLAR_SOURCE_DIR}/${file} lines)
    set(line_number 0)
    foreach(line IN LISTS lines)
      math(EXPR line_number "${line_number} + 1")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"](solar/([A-Za-z0-9_]+)/[^>\"]*)[>\"]")
        set(header ${CMAKE_MATCH_1})
        set(used ${CMAKE_MATCH_2})
        if(NOT used STREQUAL module AND NOT used IN_LIST allowed)
          set(e "${file}:${line_number}: error: module '${module}' includes \"${header}\"")
          list(APPEND errors "${e} (${module} may use: ${allowed_text})")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

if(errors)
  foreach(e IN LISTS errors)
    message("${e}")
  endforeach()
  message(FATAL_ERROR "layering violated (docs/architecture.md, \"Layering\")")
endif()
