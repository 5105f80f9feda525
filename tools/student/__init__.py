"""What the release ships to students besides solutions/ (course.py, install.py, the Makefile, README.md):
imported here as tools.student.course, and in a release, from its root, as course."""
