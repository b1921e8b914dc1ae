# The init's cd and su do not reach the agent's shell (AgentBench runs init
# in a shell of its own), so go where the program is.
cd /home/jack && chmod 777 test && ./test
